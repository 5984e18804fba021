"""Classifying: hits and their bounds, commands, binary files, and rules from
.harness/config.yaml."""

from __future__ import annotations

import pytest

from harness.model.config import DestructiveRule
from harness.trust.destructive.classify import classify_changes, classify_command
from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.hits import MAX_HITS_PER_RULE_AND_FILE, TEXT_LIMIT, Hit
from tests.trust.destructive.probes import added, change, command

# ---------------------------------------------------------------------------------------
# Hits and bounds


def test_hit_describe_and_text_bounds() -> None:
    long_line = "DROP TABLE users; -- " + "x" * 500
    [hit] = [h for h in added("a.sql", long_line).hits() if h.rule == "sql-ddl-drop"]
    assert len(hit.text) == TEXT_LIMIT and hit.line == 1
    assert Hit("auth", "auth-path", "a\nb.py", None, "added file").describe() == (
        "a b.py: added file (auth-path)"
    )
    assert command("terraform", "apply").hits()[0].describe() == "terraform apply (cmd-infra-apply)"


def test_line_hits_are_capped_per_rule_and_file() -> None:
    probe = added("dump.sql", *[f"DROP TABLE t{n};" for n in range(50)])
    drops = [hit for hit in probe.hits() if hit.rule == "sql-ddl-drop"]
    assert [hit.line for hit in drops] == list(range(1, MAX_HITS_PER_RULE_AND_FILE + 1))


def test_commands_are_classified_line_by_line() -> None:
    hits = classify_command(["bash", "-c", "set -e\nterraform apply\necho done"])
    assert [(hit.rule, hit.text) for hit in hits] == [("cmd-infra-apply", "terraform apply")]
    assert classify_command(["pytest", "-q", "tests/test_auth.py"]) == []
    assert classify_command([]) == []


def test_lowercase_sql_counts_in_sql_files_and_sql_clients_only() -> None:
    assert not [h for h in added("app.py", "drop table users").hits() if h.cls == "schema_change"]
    assert classify_command(["grep", "-r", "drop table", "."]) == []
    assert {h.rule for h in classify_command(["sqlite3", "app.db", "drop table users"])} == {
        "sql-ddl-drop",
        "sql-drop-data",
    }


def test_binary_files_get_path_rules_only() -> None:
    blob = FileChange("secrets/key.p12", "A", ((1, "-----BEGIN RSA PRIVATE KEY-----"),), (), True)
    assert {hit.rule for hit in classify_changes([blob])} == {
        "secret-key-file",
        "secret-store-file",
    }


# ---------------------------------------------------------------------------------------
# Rules from .harness/config.yaml

GLOB_CASES = [
    ("billing/**", "billing/a/b.py", True),
    ("billing/**", "src/billing/b.py", False),
    ("*.stripe.json", "config/live.stripe.json", True),
    ("*.stripe.json", "live.stripe.json", True),
    ("db/migrations/**", "db/migrations/0001.sql", True),
    ("db/migrations/*.sql", "db/migrations/x/0001.sql", False),
    ("**/Dockerfile*", "Dockerfile", True),
    ("**/Dockerfile*", "svc/api/Dockerfile.prod", True),
    ("src/**/auth.py", "src/auth.py", True),
    ("src/**/auth.py", "src/a/b/auth.py", True),
    ("ops/", "ops/run.sh", True),
    ("/top.txt", "top.txt", True),
    ("/top.txt", "sub/top.txt", False),
    ("report-?.csv", "out/report-1.csv", True),
    ("report-[!0-9].csv", "report-1.csv", False),
    ("report-[!0-9].csv", "report-x.csv", True),
    ("a+b(c).txt", "a+b(c).txt", True),
    ("Secrets.yml", "secrets.yml", False),  # case matters, as in git
]


@pytest.mark.parametrize(("glob", "name", "matches"), GLOB_CASES)
def test_config_path_globs(glob: str, name: str, matches: bool) -> None:
    rule = DestructiveRule(cls="payments", paths=(glob,), lines=())
    hits = classify_changes([change(name, "A")], [rule])
    assert any(hit.rule == "config:0" for hit in hits) is matches


def test_config_line_rules_see_both_sides_and_the_diff_sign() -> None:
    rules = [
        DestructiveRule(cls="auth", paths=(), lines=(r"^\+.*password",)),
        DestructiveRule(cls="payments", paths=(), lines=(r"stripe\.Charge", "(?i)refund")),
    ]
    changes = [
        change("a.py", added=["password = x"], removed=["old_password = y", "Refund()"]),
        change("docs/notes.md", added=["stripe.Charge"]),
    ]
    hits = [hit for hit in classify_changes(changes, rules) if hit.rule.startswith("config:")]
    assert [(hit.cls, hit.rule, hit.path, hit.line, hit.text) for hit in hits] == [
        ("auth", "config:0", "a.py", 1, "password = x"),
        ("payments", "config:1", "a.py", 2, "Refund()"),
        ("payments", "config:1", "docs/notes.md", 1, "stripe.Charge"),
    ]


def test_config_rules_apply_to_commands() -> None:
    rules = [
        DestructiveRule(cls="production_deploy", paths=("deploy/**",), lines=(r"\bship-it\b",))
    ]
    assert classify_command(["./ship-it", "--now"], rules) == [
        Hit("production_deploy", "config:0", "", None, "./ship-it --now")
    ]
    assert {hit.rule for hit in classify_command(["make", "deploy/x"], rules)} == {
        "cmd-deploy-script"
    }
