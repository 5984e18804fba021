"""Issue 30, item 7: doctor checks notify. It reports the config and the variables it
names without sending; with `--notify-url URL` it POSTs one test message to a real server
on 127.0.0.1 and reports the answer or the connection error."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harness.commands.doctor import doctor
from tests.e2e.test_notify import Hook
from tests.managed import ManagedFactory, ManagedRepo

CONFIG = {"notify": {"webhook": "$HOOK_URL", "command": "true", "env": ["PAGER_TOKEN"]}}


def _repo(managed: ManagedFactory) -> ManagedRepo:
    return managed(files={".harness/config.yaml": json.dumps(CONFIG)})


def _doctor(repo: ManagedRepo, env: dict[str, str], url: str | None) -> tuple[int, str]:
    out = io.StringIO()
    code = doctor(repo.root, env, out, False, url)
    return code, out.getvalue()


@pytest.mark.parametrize(
    ("answer", "status", "said"),
    [(200, "ok", ": HTTP 200"), (500, "fail", " failed: the server answered HTTP 500")],
)
def test_notify_url_posts_one_test_message_and_reports_the_answer(
    managed: ManagedFactory, answer: int, status: str, said: str
) -> None:
    repo = _repo(managed)
    hook = Hook(answer)
    try:
        url = hook.url + "/T0KEN-in-the-path"
        code, text = _doctor(repo, repo.env, url)
        host = f"http://127.0.0.1:{hook.server.server_address[1]}/…"
        sent = "POSTed to" if status == "ok" else "to"
        assert f"{status} notify-url: test message {sent} {host}{said}" in text.splitlines()
        assert "T0KEN" not in text
        (told,) = hook.received
        assert (told["status"], told["test"], told["goal"]) == ("test", True, None)
        assert str(told["text"]).startswith("goal-harness: test notification from `harness doctor`")
        assert (code == 0) == (status == "ok")
    finally:
        hook.server.shutdown()


def test_notify_url_names_the_connection_error(managed: ManagedFactory) -> None:
    repo = _repo(managed)
    code, text = _doctor(repo, repo.env, "http://127.0.0.1:9/hook")
    (line,) = [x for x in text.splitlines() if x.startswith("fail notify-url: ")]
    assert line.startswith(
        "fail notify-url: test message to http://127.0.0.1:9/… failed: URLError:"
    )
    assert "Connection refused" in line
    assert code == 2


def test_without_the_option_doctor_reports_the_config_and_sends_nothing(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = _repo(managed)
    hook = Hook(200)
    try:
        env = repo.env | {"HOOK_URL": hook.url, "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
        _, text = _doctor(repo, env, None)
        expected = (
            "warn notify: webhook $HOOK_URL, command true; reads HOOK_URL (set here), "
            "PAGER_TOKEN (not set); nothing sent (`harness doctor --notify-url URL` posts a "
            "test message); not set: PAGER_TOKEN"
        )
        assert expected in text.splitlines()
        file = tmp_path / "cfg" / "goal-harness" / "notify.env"
        assert f"  fix: set PAGER_TOKEN where `harness run` runs: NAME='value' lines in {file}" in (
            text
        )
        # The environment file the scheduled run reads counts as set.
        file.parent.mkdir(parents=True)
        file.write_text("PAGER_TOKEN='pager-token-value'\n")
        _, text = _doctor(repo, env, None)
        shown = (
            "ok notify: webhook $HOOK_URL, command true; reads HOOK_URL (set here), "
            f"PAGER_TOKEN (in {file}); nothing sent"
        )
        assert shown in text
        assert "pager-token-value" not in text and hook.url not in text
        assert hook.received == []
    finally:
        hook.server.shutdown()


def test_a_bad_notify_url_is_one_line_and_exit_2(managed: ManagedFactory) -> None:
    repo = _repo(managed)
    proc = repo.harness("doctor", "--notify-url", "ftp://example.com/x", check=2)
    assert proc.stderr == (
        "harness: --notify-url: 'ftp://example.com/x' (expected an http:// or https:// URL)\n"
    )
    assert proc.stdout == ""
