"""Issue 18, "first-day papercuts": what a new team met following the guide."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from harness.model.lessons import parse_lesson
from tests.managed import (
    SECRET,
    Key,
    ManagedFactory,
    ManagedRepo,
    base_goal,
    git,
    harness_in,
    keygen_verifies,
    make_key,
)


def _crlf_checkout(repo: ManagedRepo) -> None:
    """core.autocrlf=true and the goal file checked out again: CRLF in the working copy,
    LF in the blob git stores (what `run` reads)."""
    git(repo.root, "config", "core.autocrlf", "true")
    (repo.root / "goals" / "g1.yaml").unlink()
    git(repo.root, "checkout", "--", "goals/g1.yaml")
    assert b"\r\n" in (repo.root / "goals" / "g1.yaml").read_bytes()


def test_core_autocrlf_approval_hashes_what_git_stores(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    _crlf_checkout(repo)
    approved = repo.harness("approve", "g1", "--key", str(repo.key.private), check=0).stdout
    assert "goals/g1.yaml: the working copy differs from the blob git stores" in approved
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve g1")
    checked = repo.harness("check", check=0).stdout
    assert "ok: 1 goal(s)" in checked
    assert "goals/g1.yaml: the working copy differs from the blob git stores" in checked
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_check_refuses_an_approval_run_would_refuse(managed: ManagedFactory) -> None:
    """Approved with the CRLF bytes (what `approve` signed before): `check` must say what
    `run` says, not `ok`."""
    repo = managed(approve=False)
    _crlf_checkout(repo)
    import hashlib

    from harness.trust.approvals import append_record
    from harness.trust.sshsig import sign
    from harness.trust.statement import Statement

    crlf = (repo.root / "goals" / "g1.yaml").read_bytes()
    statement = Statement(goal="g1", sha256=hashlib.sha256(crlf).hexdigest(), decision="run")
    append_record(
        repo.root / "goals" / "g1.approval",
        statement,
        sign(statement.to_bytes(), repo.key.private),
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve g1 the old way")
    checked = repo.harness("check", check=3)
    ran = repo.harness("run", check=0)  # waiting for approval is not an error (issue 15)
    assert "approv" in checked.stdout and "waiting for approval" in ran.stderr


@pytest.mark.parametrize(
    "args", [("status",), ("status", "--check"), ("status", "--json"), ("verify",), ("run",)]
)
def test_a_repository_without_harness_files_is_exit_2_not_silence(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A cron line with the wrong `cd` must not look green for ever."""
    root = tmp_path / "plain"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("not managed\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a plain repository")
    env = {**os.environ, "HARNESS_SECRET": SECRET}
    proc = harness_in(root, env, *args)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "not a harness repository (refs/heads/main has no .harness/owners)" in proc.stderr


def test_goal_files_in_a_subfolder_or_named_yml_get_a_note(managed: ManagedFactory) -> None:
    repo = managed(files={"goals/team/x.yaml": "id: x\n", "goals/x.yml": "id: x\n"})
    checked = repo.harness("check", check=0).stdout
    folder = "goals/team/: ignored (goal files sit directly in goals/, not in a subfolder)"
    suffix = "goals/x.yml: ignored (a goal file's name ends in .yaml: rename it goals/x.yaml)"
    assert f"note: {folder}\n" in checked and f"note: {suffix}\n" in checked
    ran = repo.harness("run", check=0)
    assert f"harness: note: {folder}\n" in ran.stderr
    assert f"harness: note: {suffix}\n" in ran.stderr
    assert repo.status()["status"] == "completed"


def test_run_with_nothing_runnable_says_why(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}})
    repo.harness("run", check=0)
    again = repo.harness("run", check=0)
    assert again.stdout == ""
    assert again.stderr == (
        "harness: nothing to run: g1 waits for a decision (parked_at_eyes, gate ship)\n"
    )


def test_an_initialised_repository_without_goals_says_so(managed: ManagedFactory) -> None:
    repo = managed()
    git(repo.root, "rm", "-q", "goals/g1.yaml", "goals/g1.approval")
    git(repo.root, "commit", "-qm", "no goals")
    assert repo.harness("run", check=0).stderr == (
        "harness: note: nothing to run: no goals on main (`harness new <id>`, approve it, commit)\n"
    )
    assert "no goals yet on main" in repo.harness("status", check=0).stderr
    verified = repo.harness("verify", check=0)
    assert verified.stderr == "harness: note: nothing to verify: no goal has records yet\n"


def test_extend_budget_must_raise_the_limit_above_what_is_used(managed: ManagedFactory) -> None:
    repo = managed(mode="never", goal=base_goal() | {"budget": {"max_iterations": 2}})
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["gate"], row["budget_used"]["iterations"]) == ("budget_exhausted", 2)
    approval = (repo.root / "goals" / "g1.approval").read_bytes()
    key = ("--key", str(repo.key.private))

    def unpark(*extra: str) -> str:
        return repo.harness("unpark", "g1", *key, *extra, check=2).stderr

    assert unpark("--extend-budget", "iterations=1") == (
        "harness: --extend-budget: iterations=1 is not above the 2 already used (the value"
        " sets the new limit, it does not add to it; expected iterations=4 or another value"
        " above 2)\n"
    )
    assert "iterations=2 is not above the 2 already used" in unpark(
        "--extend-budget", "iterations=2"
    )
    assert unpark("--extend-budget", "cost_usd=100") == (
        "harness: --extend-budget: iterations is used up (iterations 2/2) and this decision"
        " keeps that limit (expected iterations=4 as well)\n"
    )
    assert unpark() == (
        "harness: goal g1: waits at gate budget_exhausted (iterations 2/2): a plain unpark"
        " would stop there again; it needs a budget (expected --extend-budget iterations=4)\n"
    )
    assert (repo.root / "goals" / "g1.approval").read_bytes() == approval
    repo.harness("unpark", "g1", *key, "--extend-budget", "iterations=3", check=0)
    assert repo.count("build") == ["1", "2", "3"]
    assert repo.status()["budget_limit"]["iterations"] == 3


BAD_LESSON = "version: 1\nwhen: {keywords: []}\ntext: Write the downgrade.\n"
BAD_LESSON_LINE = (
    "lessons/bad.yaml: when: has no keywords and no patterns"
    " (expected at least 1 and at most 50 keywords and patterns in all)"
)


def test_check_and_doctor_report_an_invalid_lesson(managed: ManagedFactory) -> None:
    repo = managed(files={"lessons/bad.yaml": BAD_LESSON})
    checked = repo.harness("check", check=2)
    assert checked.stdout == BAD_LESSON_LINE + "\n"
    doctor = repo.harness("doctor", check=2).stdout
    assert f"fail lessons: {BAD_LESSON_LINE}\n" in doctor


def test_init_makes_lessons_and_new_lesson_writes_a_valid_template(
    tmp_path: Path, owner_key: Key
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")

    def harness(*args: str, code: int = 0) -> str:
        proc = harness_in(root, dict(os.environ), *args)
        assert proc.returncode == code, proc
        return proc.stdout + proc.stderr

    harness("init", "--owner", "me@example.com", "--key", owner_key.public)
    assert "harness new --lesson" in (root / "lessons" / "README.md").read_text()
    made = harness("new", "--lesson", "alembic-downgrade")
    assert made.startswith("wrote lessons/alembic-downgrade.yaml")
    assert harness("check") == "ok: 0 goal(s), 1 owner key(s)\n"
    data = (root / "lessons" / "alembic-downgrade.yaml").read_bytes()
    lesson = parse_lesson(data, "lessons/alembic-downgrade.yaml", "alembic-downgrade")
    assert lesson.keywords == ("alembic downgrade",) and lesson.check is None
    assert "already exists" in harness("new", "--lesson", "alembic-downgrade", code=2)
    assert "not a lesson name" in harness("new", "--lesson", "Bad", code=2)
    assert "no goal id" in harness("new", code=2)


def test_after_an_owners_change_decisions_are_refused_until_rotate_owners(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed(mode="never", goal=base_goal() | {"budget": {"max_iterations": 2}})
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "budget_exhausted"
    newcomer = make_key(tmp_path, "newcomer")
    owners = repo.root / ".harness" / "owners"
    owners.write_text(owners.read_text() + f"new@example.com {newcomer.public}\n")
    git(repo.root, "commit", "-qam", "add an owner")
    row = repo.status()
    assert (row["gate"], row["owners_changed"]) == ("budget_exhausted", True)
    line = repo.harness("status", check=0).stdout
    assert "blocked=owners_changed" in line and "`harness rotate-owners g1 --key K`" in line
    assert repo.harness("status", "--check").returncode == 11
    approval = repo.root / "goals" / "g1.approval"
    before = approval.read_bytes()
    key = ("--key", str(repo.key.private))
    refused = repo.harness("unpark", "g1", *key, "--extend-budget", "iterations=3", check=3)
    assert "changed after the goal started (owners_changed)" in refused.stderr
    assert "`harness rotate-owners g1 --key K`" in refused.stderr
    assert refused.stdout == "" and approval.read_bytes() == before
    stranger = repo.harness("rotate-owners", "g1", "--key", str(newcomer.private), check=3)
    assert "not one of the owners goal g1 started under" in stranger.stderr
    assert approval.read_bytes() == before
    rotated = repo.harness("rotate-owners", "g1", *key, check=0).stdout
    assert "signed `rotate-owners " in rotated and "sign it again after the rotation" in rotated
    assert "owners rotated to sha256=" in rotated and "by owner@example.com" in rotated
    row = repo.status()
    assert (row["gate"], row["owners_changed"]) == ("budget_exhausted", False)
    repo.harness("unpark", "g1", *key, "--extend-budget", "iterations=3", check=0)
    assert repo.count("build") == ["1", "2", "3"]


def test_rotate_owners_signs_the_documented_statement(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """The statement of docs/guide/approvals.md's ssh-keygen recipe, verifiable by it."""
    repo = managed(mode="never", goal=base_goal() | {"budget": {"max_iterations": 5}})
    repo.harness("run", "--max-steps", "1", check=0)
    owners = repo.root / ".harness" / "owners"
    newcomer = make_key(tmp_path, "newcomer")
    owners.write_text(owners.read_text() + f"new@example.com {newcomer.public}\n")
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    out = repo.harness("rotate-owners", "g1", "--key", str(repo.key.private), env=env, check=0)
    assert "next: commit .harness/owners and goals/g1.approval" in out.stdout
    goal_sha = hashlib.sha256((repo.root / "goals" / "g1.yaml").read_bytes()).hexdigest()
    owners_sha = hashlib.sha256(owners.read_bytes()).hexdigest()
    record = (repo.root / "goals" / "g1.approval").read_text().split("\n\n")[-1]
    git(repo.root, "stash", "-q")  # ssh-keygen checks against the pinned owners file
    statement = keygen_verifies(repo, record, tmp_path)
    git(repo.root, "stash", "pop", "-q")
    assert statement == (
        f"harness-approval v1\ngoal g1\nsha256 {goal_sha}\ndecision rotate-owners {owners_sha}\n"
    )
    git(repo.root, "commit", "-qam", "add an owner, signed by the pinned owner")
    ran = repo.harness("run", "--max-steps", "1", check=0).stdout
    assert "owners rotated to sha256=" in ran
