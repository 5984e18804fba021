"""The one redactor (harness/trust/redact.py): what it replaces, its receipts, and what it
leaves alone."""

from __future__ import annotations

import base64
import hashlib
import urllib.parse

import pytest

from harness.trust.redact import NO_SECRETS, Redactor, receipt, secret_names

TOKEN = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
ENV = {"DEPLOY_TOKEN": TOKEN, "PATH": "/usr/bin", "HOME": "/home/runner", "SHORT_TOKEN": "abc"}
MARK = f"[redacted:DEPLOY_TOKEN sha256:{hashlib.sha256(TOKEN.encode()).hexdigest()[:12]}]"


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "HARNESS_PUSH_TOKEN",
        "DEPLOY_TOKEN",
        "DB_PASSWORD",
        "my_password_file",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "STRIPE_SECRET",
        "X_API_KEY",
        "FAKE_OPENAI_KEY",
        "DEPLOY_SSH_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
)
def test_a_secret_name_is_redacted(name: str) -> None:
    assert secret_names({name: "v"}) == [name]


@pytest.mark.parametrize("name", ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "KEYBOARD", "USER"])
def test_an_ordinary_name_is_not(name: str) -> None:
    assert secret_names({name: "v"}) == []


def test_redact_env_names_any_variable() -> None:
    assert secret_names({"DEPLOY_URL": "https://x", "PATH": "/"}, ["DEPLOY_URL"]) == ["DEPLOY_URL"]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "text",
    [
        f"token={TOKEN}",
        f"echo {TOKEN}; done",
        f"b64 {_b64(TOKEN)}",
        f"basic {_b64('user:' + TOKEN)}",
        f"basic {_b64('us:' + TOKEN + ':x')}",
        f"url {base64.urlsafe_b64encode(('ab' + TOKEN).encode()).decode()}",
        f"quoted {urllib.parse.quote('p/' + TOKEN + '&', safe='')}",
        f"DEPLOY_TOKEN={TOKEN}\nPATH=/usr/bin\n",
    ],
)
def test_every_form_of_a_value_is_replaced_by_its_receipt(text: str) -> None:
    redactor = Redactor.for_env(ENV)
    out = redactor.text(text)
    assert TOKEN not in out and _b64(TOKEN)[:20] not in out
    assert MARK in out


def test_a_tail_left_by_a_cut_is_redacted() -> None:
    redactor = Redactor.for_env(ENV)
    assert redactor.text(TOKEN[11:] + "\nrest") == MARK + "\nrest"
    cut = "[… 5000 characters cut]\n"
    assert redactor.text(cut + TOKEN[20:] + " rest") == cut + MARK + " rest"
    # a short tail (under 8 characters) is not a secret's
    assert redactor.text(TOKEN[-5:] + " rest") == TOKEN[-5:] + " rest"


def test_short_values_and_ordinary_variables_are_left_alone() -> None:
    redactor = Redactor.for_env(ENV)
    assert redactor.text("abc /usr/bin /home/runner") == "abc /usr/bin /home/runner"


@pytest.mark.parametrize(
    ("kind", "secret"),
    [
        ("github-token", "ghp_" + "A1b2C3d4E5" * 4),
        ("github-token", "github_pat_11ABCDEFG0" + "x" * 40),
        ("github-token", "ghs_" + "z9" * 18),
        ("anthropic-key", "sk-ant-api03-" + "Ab3_" * 10),
        ("openai-key", "sk-proj-" + "aB3dE6gH9j" * 4),
        ("openai-key", "sk-" + "0123456789abcdefghij" * 2),
        ("aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"),
        ("slack-token", "xoxb-123456789012-abcdefghijkl"),
        ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n"),
        (
            "private-key",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
            "-----END OPENSSH PRIVATE KEY-----",
        ),
    ],
)
def test_token_shapes_are_redacted_whoever_held_them(kind: str, secret: str) -> None:
    out = NO_SECRETS.text(f"seen: {secret} end")
    assert out == f"seen: {receipt(kind, secret)} end"


def test_a_key_block_cut_before_its_end_is_redacted_to_the_end() -> None:
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow (the rest was cut)"
    assert NO_SECRETS.text("seen: " + cut) == "seen: " + receipt("private-key", cut)


@pytest.mark.parametrize(
    "text",
    [
        "task-1234567890abcdefghijklmn done",  # `sk-` inside a word
        "disk-usage-report-for-2026-12-02 ok",
        "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
        "ghp_short",
        "AKIA-not-a-key",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert NO_SECRETS.text(text) == text


def test_data_redacts_every_string_inside() -> None:
    redactor = Redactor.for_env(ENV)
    data = {"output_tail": f"x {TOKEN}", "changed": [f"{TOKEN}.txt"], "exit_code": 0}
    assert redactor.data(data) == {
        "output_tail": f"x {MARK}",
        "changed": [f"{MARK}.txt"],
        "exit_code": 0,
    }


def test_found_lists_receipts_without_changing_text() -> None:
    redactor = Redactor.for_env(ENV)
    assert redactor.found(f"{TOKEN} and AKIAIOSFODNN7EXAMPLE") == [
        MARK,
        receipt("aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"),
    ]


def test_the_harness_own_ids_are_never_redacted() -> None:
    """A hex id holding a short secret's form stays the id later steps compare."""
    redactor = Redactor.for_env({"PIN_PASSWORD": "deadbeef"})
    tree = "0123deadbeef4567" * 2 + "89abcdef"
    data = {"tree": tree, "commit": tree, "output_tail": tree}
    out = redactor.data(data)
    assert (out["tree"], out["commit"]) == (tree, tree)
    assert "deadbeef" not in out["output_tail"]
