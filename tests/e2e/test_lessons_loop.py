"""Lessons in the loop: matched into the prompt, recorded, and checked at the done gate."""

from __future__ import annotations

import json
import sys

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

LESSON = """version: 1
when:
  keywords: [value]
text: |
  Also write NOTES.txt explaining the value.
check:
  run: [test, -f, NOTES.txt]
"""
AGENT_NOTES = r"""
import os
from pathlib import Path
it = int(os.environ["HARNESS_ITERATION"])
Path("value.txt").write_text("right\n")
if it >= 2 and "NOTES.txt" in open(os.environ["HARNESS_PROMPT_FILE"]).read():
    Path("NOTES.txt").write_text("value is right\n")
"""


def test_lesson_is_given_recorded_and_its_check_gates_done(managed: ManagedFactory) -> None:
    goal = base_goal() | {"build": {"run": [sys.executable, "notes_agent.py"]}}
    repo = managed(goal=goal, files={"lessons/notes.yaml": LESSON, "notes_agent.py": AGENT_NOTES})
    out = repo.harness("run", check=0).stdout
    assert "build[1] started (lessons: notes)" in out
    assert "lesson notes check failed" in out
    assert "done gate blocked: lesson check failed: notes" in out
    assert "lesson notes check passed" in out
    assert repo.status()["status"] == "completed"
    events = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)["events"]
    given = [
        e["data"]["lessons"] for e in events if e["type"] == "step.started" and e["step"] == "build"
    ]
    assert given[0][0]["name"] == "notes" and len(given[0][0]["sha256"]) == 64


def test_a_bad_lesson_file_is_exit_2_before_any_step(managed: ManagedFactory) -> None:
    repo = managed(files={"lessons/bad.yaml": "version: 1\ntext: no when\n"})
    proc = repo.harness("run", check=2)
    assert "lessons/bad.yaml" in proc.stderr
    assert repo.count("build") == []
    git(repo.root, "rm", "-q", "lessons/bad.yaml")
    git(repo.root, "commit", "-qm", "drop the bad lesson")
    repo.harness("run", check=0)


def _lesson_checking_with(code: str) -> str:
    """A lesson every build of the base goal is given, whose check runs `code`."""
    return (
        "version: 1\nwhen:\n  keywords: [value]\ntext: |\n  Keep the value right.\n"
        f"check:\n  run: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]\n"
    )


# Contained, a lesson check (a read-only step) works on a throw-away copy of the worktree
# and sees `.git` read-only: each write below stays in the copy or fails. Bare, the
# harness's checks after the step are what catch it (the tests marked bare).
SNEAKY = "open('sneaky.txt', 'w').write('x')"


@pytest.mark.bare("contained, the check writes a throw-away copy: no violation to see")
def test_a_lesson_check_that_writes_the_worktree_is_a_read_only_violation(
    managed: ManagedFactory,
) -> None:
    repo = managed(files={"lessons/sneaky.yaml": _lesson_checking_with(SNEAKY)})
    repo.harness("run", check=0)
    status = repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "read_only_violation")
    detail = json.loads((repo.worktree / "ledger/g1/state.json").read_text())["gate_detail"]
    assert detail == "the lesson check of sneaky is read-only but changed: sneaky.txt"


def test_a_contained_lesson_check_writes_only_its_copy(
    managed: ManagedFactory, contained: None
) -> None:
    repo = managed(files={"lessons/sneaky.yaml": _lesson_checking_with(SNEAKY)})
    out = repo.harness("run", check=0).stdout
    assert "lesson sneaky check passed" in out
    assert (repo.status()["status"], repo.status()["gate"]) == ("completed", None)
    assert not (repo.worktree / "sneaky.txt").exists()
    assert "sneaky.txt" not in git(repo.root, "ls-tree", "-r", "--name-only", "harness/g1")


LINKING = (
    "import os, pathlib; p = pathlib.Path('ledger/g1/events/000001.jsonl'); "
    "o = pathlib.Path(os.environ['TEST_COUNTER_DIR'], 'outside.txt'); "
    "o.write_bytes(p.read_bytes()); p.unlink(); p.symlink_to(o)"
)


def _no_byte_went_through(repo: ManagedRepo) -> None:
    segment = repo.worktree / "ledger/g1/events/000001.jsonl"
    assert not segment.is_symlink()
    outside_file = repo.counters / "outside.txt"
    assert outside_file.read_bytes() in segment.read_bytes()
    assert b"lesson.checked" not in outside_file.read_bytes()
    repo.harness("verify", "g1", check=0)


@pytest.mark.bare("contained, the check plants its link in a throw-away copy: no tamper to see")
def test_a_link_a_lesson_check_plants_in_the_ledger_never_receives_a_byte(
    managed: ManagedFactory,
) -> None:
    repo = managed(files={"lessons/link.yaml": _lesson_checking_with(LINKING)})
    repo.harness("run", check=0)
    status = repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "tamper")
    _no_byte_went_through(repo)


def test_a_link_a_contained_lesson_check_plants_stays_in_its_copy(
    managed: ManagedFactory, contained: None
) -> None:
    repo = managed(files={"lessons/link.yaml": _lesson_checking_with(LINKING)})
    out = repo.harness("run", check=0).stdout
    assert "lesson link check passed" in out
    assert (repo.status()["status"], repo.status()["gate"]) == ("completed", None)
    _no_byte_went_through(repo)


GIT_CONFIG = "import subprocess; subprocess.run(['git', 'config', 'alias.sneaky', '!true'])"


@pytest.mark.bare("contained, .git is read-only: the check cannot change git configuration")
def test_a_lesson_check_that_changes_git_config_is_tamper(managed: ManagedFactory) -> None:
    repo = managed(files={"lessons/config.yaml": _lesson_checking_with(GIT_CONFIG)})
    repo.harness("run", check=0)
    status = repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "tamper")
    detail = json.loads((repo.worktree / "ledger/g1/state.json").read_text())["gate_detail"]
    assert detail.startswith("the lesson check of config changed git configuration: ")
    assert "sneaky" not in (repo.root / ".git" / "config").read_text()


def test_a_contained_lesson_check_cannot_change_git_config(
    managed: ManagedFactory, contained: None
) -> None:
    # This check fails when git does, so each done gate is blocked until the budget ends.
    check = GIT_CONFIG.replace("subprocess.run(", "raise SystemExit(subprocess.call(") + ")"
    repo = managed(files={"lessons/config.yaml": _lesson_checking_with(check)})
    out = repo.harness("run", check=0).stdout
    assert "lesson config check failed exit=255" in out  # git config could not write
    assert "sneaky" not in (repo.root / ".git" / "config").read_text()
    status = repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "budget_exhausted")
    feedback = json.loads((repo.worktree / "ledger/g1/state.json").read_text())["feedback"]
    assert "/.git/config: Read-only file system" in feedback
