"""Parsing: real `git diff` output and hand-written diffs parse into FileChanges, and a
real diff classifies end to end."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.trust.destructive.classify import classify_changes
from harness.trust.destructive.diff import FileChange, parse_diff
from harness.trust.destructive.hits import classes_of


def run_git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
    return done.stdout.decode("utf-8", "replace")


def staged_diff(repo: Path, base: str) -> str:
    run_git(repo, "add", "-A")
    return run_git(repo, "diff", "--cached", "-U0", "--no-renames", "--no-color", base)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    run_git(tmp_path, "init", "-q")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "clients été.csv").write_text("id,name\n1,a\n2,b\n")
    (tmp_path / "logo.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "tool.sh").write_text("echo hi\n")
    (tmp_path / "schema.sql").write_text("-- users\nSELECT 1;\n")
    run_git(tmp_path, "add", "-A")
    run_git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def test_end_to_end_real_git_diff(repo: Path) -> None:
    base = run_git(repo, "rev-parse", "HEAD").strip()
    (repo / "migrations").mkdir()
    (repo / "migrations" / "0002_drop_users.sql").write_text("-- bye\n\nDROP TABLE users;\n")
    (repo / "data" / "clients été.csv").unlink()
    (repo / "logo.bin").write_bytes(b"\x00\x09\x02\x07")
    (repo / "notes.txt").write_text("one\n2\nthree")  # changed middle, no final newline
    (repo / "tool.sh").chmod(0o755)  # mode only
    (repo / "schema.sql").write_text("SELECT 1;\n")  # removes a "-- users" line
    changes = {c.path: c for c in parse_diff(staged_diff(repo, base))}

    assert set(changes) == {
        "migrations/0002_drop_users.sql",
        "data/clients été.csv",
        "logo.bin",
        "notes.txt",
        "tool.sh",
        "schema.sql",
    }
    migration = changes["migrations/0002_drop_users.sql"]
    assert (migration.status, migration.added) == (
        "A",
        ((1, "-- bye"), (2, ""), (3, "DROP TABLE users;")),
    )
    deleted = changes["data/clients été.csv"]
    assert (deleted.status, deleted.removed) == ("D", ((1, "id,name"), (2, "1,a"), (3, "2,b")))
    assert changes["logo.bin"].binary and changes["logo.bin"].status == "M"
    assert changes["notes.txt"].added == ((2, "2"), (3, "three"))
    assert changes["notes.txt"].removed == ((2, "two"), (3, "three"))
    assert changes["tool.sh"] == FileChange("tool.sh", "M", (), (), False)
    # A removed SQL comment shows as "--- users" inside the hunk: a line, not a header.
    assert changes["schema.sql"].removed == ((1, "-- users"),)

    hits = classify_changes(list(changes.values()))
    described = {hit.describe() for hit in hits}
    assert "migrations/0002_drop_users.sql:3: DROP TABLE users; (sql-ddl-drop)" in described
    assert "migrations/0002_drop_users.sql:3: DROP TABLE users; (sql-drop-data)" in described
    assert "migrations/0002_drop_users.sql: added file (migration-path)" in described
    assert "data/clients été.csv: deleted file (data-file-deleted)" in described
    assert classes_of(hits) == ("schema_change", "data_deletion")


def test_unicode_and_special_paths_are_unquoted(repo: Path) -> None:
    base = run_git(repo, "rev-parse", "HEAD").strip()
    names = ["sp ace/my file.txt", 'quo"te.txt', "tab\there.txt", "café/ünï.txt", "back\\slash.txt"]
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x\n")
    diff = staged_diff(repo, base)
    assert '"b/caf\\303\\251/\\303\\274n\\303\\257.txt"' in diff  # git did quote them
    parsed = {change.path: change for change in parse_diff(diff)}
    assert set(parsed) == set(names)
    assert all(change.status == "A" and change.added == ((1, "x"),) for change in parsed.values())


def test_empty_new_and_deleted_files_take_status_from_the_header(repo: Path) -> None:
    base = run_git(repo, "rev-parse", "HEAD").strip()
    (repo / "empty one.txt").write_text("")
    (repo / "tool.sh").unlink()
    parsed = {change.path: change for change in parse_diff(staged_diff(repo, base))}
    assert parsed["empty one.txt"] == FileChange("empty one.txt", "A", (), (), False)
    assert parsed["tool.sh"].status == "D"
    assert parsed["tool.sh"].removed == ((1, "echo hi"),)


DIFF_CASES = [
    (
        "hunk counts and line numbers",
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -3,2 +3,0 @@ def f():\n-a\n-b\n"
        "@@ -10 +8,2 @@\n-c\n+d\n+e\n",
        [FileChange("f", "M", ((8, "d"), (9, "e")), ((3, "a"), (4, "b"), (10, "c")), False)],
    ),
    (
        "lines that look like headers",
        "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1 +1 @@\n--- old\n+++ new\n",
        [FileChange("q.sql", "M", ((1, "++ new"),), ((1, "-- old"),), False)],
    ),
    (
        "crlf and no newline at end",
        "diff --git a/w.txt b/w.txt\r\n--- a/w.txt\r\n+++ b/w.txt\r\n@@ -1 +1 @@\r\n-a\r\n"
        "\\ No newline at end of file\r\n+b\r\n\\ No newline at end of file\r\n",
        [FileChange("w.txt", "M", ((1, "b"),), ((1, "a"),), False)],
    ),
    (
        "binary added",
        "diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..e69de29\n"
        "Binary files /dev/null and b/img.png differ\n",
        [FileChange("img.png", "A", (), (), True)],
    ),
    (
        "binary patch deleted",
        "diff --git a/k.der b/k.der\ndeleted file mode 100644\nGIT binary patch\nliteral 0\n",
        [FileChange("k.der", "D", (), (), True)],
    ),
    (
        "mnemonic prefixes",
        "diff --git c/x.py i/x.py\n--- c/x.py\n+++ i/x.py\n@@ -0,0 +1 @@\n+y\n",
        [FileChange("x.py", "M", ((1, "y"),), (), False)],
    ),
    (
        "rename without --no-renames",
        "diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\n"
        "rename to new.py\n",
        [FileChange("new.py", "M", (), (), False)],
    ),
    ("empty", "", []),
]


@pytest.mark.parametrize(("label", "diff", "expected"), DIFF_CASES, ids=[c[0] for c in DIFF_CASES])
def test_parse_diff_cases(label: str, diff: str, expected: list[FileChange]) -> None:
    assert parse_diff(diff) == expected
