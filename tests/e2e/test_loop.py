"""The goal loop end to end, through the real `harness` command, real git and real agents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, base_goal, git, keygen_verifies, make_key


def test_fix_on_second_try_parks_at_ship(managed: ManagedFactory) -> None:
    goal = base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}}
    repo = managed(goal=goal)
    run = repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["iteration"]) == ("parked_at_eyes", "ship", 2)
    assert repo.count("build") == ["1", "2"] and repo.count("judge") == ["1", "2"]
    assert not (repo.worktree / "SHIPPED").exists()
    assert "failing=tests/test_value.py::test_value_is_right" in run.stdout
    prompt = (repo.counters / "prompt-2.txt").read_text()
    assert "Failing: tests/test_value.py::test_value_is_right" in prompt
    assert "value is 'wrong'" in prompt


def test_parked_goal_stays_parked(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}})
    repo.harness("run", check=0)
    head = git(repo.worktree, "rev-parse", "HEAD")
    again = repo.harness("run", check=0)
    assert again.stdout == ""
    assert git(repo.worktree, "rev-parse", "HEAD") == head
    assert repo.status()["status"] == "parked_at_eyes"


def test_goal_without_ship_completes(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_budget_used_is_reported(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", check=0)
    used = repo.status()["budget_used"]
    assert used["iterations"] == 2 and used["turns"] == 4
    assert abs(used["cost_usd"] - 0.5) < 1e-9
    assert used["passes"] == 4


def test_agent_that_changes_nothing_stops_at_no_progress(managed: ManagedFactory) -> None:
    repo = managed(mode="nothing")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "no_progress")
    assert repo.count("build") == ["1", "2"]


def test_never_passing_judge_stops_at_budget_after_two_builds(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"budget": {"max_iterations": 2}}, mode="never")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "budget_exhausted")
    assert repo.count("build") == ["1", "2"]


def test_max_passes_ceiling(managed: ManagedFactory) -> None:
    repo = managed(
        goal=base_goal() | {"halt": {"no_progress_passes": 5, "max_passes": 3}}, mode="never"
    )
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "max_passes")
    assert row["budget_used"]["passes"] == 3


def test_expected_files_block_the_done_gate(managed: ManagedFactory) -> None:
    goal = base_goal() | {"expect": {"files": ["missing.txt"]}, "budget": {"max_iterations": 2}}
    repo = managed(goal=goal, mode="fix-on-1")
    out = repo.harness("run", check=0).stdout
    assert "done gate blocked: missing missing.txt" in out
    assert repo.status()["gate"] in ("budget_exhausted", "no_progress")


# A judge that writes a file into the worktree, then judges as the base goal's does.
WRITING_JUDGE = {"run": ["sh", "-c", f'echo x > judge-wrote.txt; exec "{sys.executable}" judge.py']}


@pytest.mark.bare("contained, a read-only step writes a throw-away copy: no violation to see")
def test_read_only_judge_that_writes_is_a_violation(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"judge": WRITING_JUDGE})
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "read_only_violation")


def test_a_contained_judge_that_writes_writes_only_its_copy(
    managed: ManagedFactory, contained: None
) -> None:
    repo = managed(goal=base_goal() | {"judge": WRITING_JUDGE})
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["iteration"]) == ("completed", None, 2)
    assert repo.count("judge") == ["1", "2"]
    assert not (repo.worktree / "judge-wrote.txt").exists()
    assert "judge-wrote.txt" not in git(repo.root, "ls-tree", "-r", "--name-only", "harness/g1")


def test_edited_goal_after_start_gates_goal_changed(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    repo.commit_goal_change(base_goal() | {"objective": "Something else.\n"})
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "goal_changed")
    assert repo.count("build") == ["1"]


def test_reapproved_goal_continues_with_the_same_budget(managed: ManagedFactory) -> None:
    repo = managed(mode="never", goal=base_goal() | {"budget": {"max_iterations": 2}})
    repo.harness("run", "--max-steps", "2", check=0)
    repo.commit_goal_change(
        base_goal() | {"budget": {"max_iterations": 2}, "objective": "Try harder.\n"}
    )
    repo.harness("approve", repo.goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "commit", "-qam", "re-approve")
    out = repo.harness("run", check=0).stdout
    assert " revised sha256=" in out
    assert repo.status()["gate"] == "budget_exhausted"
    assert repo.count("build") == ["1", "2"]


def test_cancel_stops_the_goal(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    repo.harness("cancel", repo.goal_id, check=0)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "cancelled"
    assert repo.count("build") == ["1"]


def test_unapproved_goal_never_runs(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    proc = repo.harness("run", check=0)  # waiting for approval is not an error
    assert "waiting for approval" in proc.stderr
    assert repo.count("build") == []
    assert git(repo.root, "branch", "--list", "harness/*") == ""


def test_goal_signed_by_non_owner_never_runs(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(approve=False)
    stranger = make_key(tmp_path, "stranger")
    from harness.trust.approvals import append_record
    from harness.trust.sshsig import sign
    from harness.trust.statement import Statement

    data = (repo.root / "goals" / "g1.yaml").read_bytes()
    import hashlib

    statement = Statement(goal="g1", sha256=hashlib.sha256(data).hexdigest(), decision="run")
    append_record(
        repo.root / "goals" / "g1.approval", statement, sign(statement.to_bytes(), stranger.private)
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "forged approval")
    repo.harness("run", check=3)
    assert repo.count("build") == []


def test_goal_edited_after_signing_never_runs(managed: ManagedFactory) -> None:
    repo = managed(approve=True)
    repo.commit_goal_change(base_goal() | {"objective": "Edited after approval.\n"})
    proc = repo.harness("run", check=0)  # waits for re-approval: not an error
    assert "changed after it was approved" in proc.stderr
    assert repo.count("build") == []


def test_approve_with_a_non_owner_key_is_refused(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(approve=False)
    stranger = make_key(tmp_path, "stranger")
    proc = repo.harness("approve", "g1", "--key", str(stranger.private), check=2)
    assert "not listed in .harness/owners" in proc.stderr
    assert not (repo.root / "goals" / "g1.approval").exists()


def test_approval_made_by_ssh_keygen_is_accepted(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(approve=False)
    import hashlib

    from harness.trust.statement import Statement

    data = (repo.root / "goals" / "g1.yaml").read_bytes()
    statement = Statement(goal="g1", sha256=hashlib.sha256(data).hexdigest(), decision="run")
    message = tmp_path / "statement"
    message.write_bytes(statement.to_bytes())
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-Y",
            "sign",
            "-f",
            str(repo.key.private),
            "-n",
            "harness",
            str(message),
        ],
        check=True,
        capture_output=True,
    )
    sig = (tmp_path / "statement.sig").read_text()
    (repo.root / "goals" / "g1.approval").write_text(statement.to_bytes().decode() + sig)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approved with ssh-keygen")
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_approval_made_by_harness_passes_ssh_keygen_verify(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed(approve=True)
    record = (repo.root / "goals" / "g1.approval").read_text()
    assert keygen_verifies(repo, record, tmp_path).endswith("decision run\n")


def test_no_secret_run_exits_3_verify_says_unverified_and_nothing_changes(
    managed: ManagedFactory,
) -> None:
    repo = managed()
    repo.harness("run", "--max-steps", "2", check=0)
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    before = repo.snapshot()
    head = git(repo.worktree, "rev-parse", "HEAD")
    run = repo.harness("run", env=env, check=3)
    assert "no secret: " in run.stderr and "reviewer clone" in run.stderr
    # a reviewer clone verifies what needs no secret, and says the MACs went unchecked
    verify = repo.harness("verify", env=env, check=0)
    assert "(unverified: no secret here: MACs not checked;" in verify.stdout
    assert repo.snapshot() == before
    assert git(repo.worktree, "rev-parse", "HEAD") == head


def test_short_or_wrong_secret_is_refused(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", "--max-steps", "1", check=0)
    before = repo.snapshot()
    short = repo.env | {"HARNESS_SECRET": "too-short"}
    assert "at least 32" in repo.harness("run", env=short, check=3).stderr
    wrong = repo.env | {"HARNESS_SECRET": "another-secret-0123456789abcdef0123456789"}
    assert "MAC" in repo.harness("run", env=wrong, check=3).stderr
    assert repo.harness("verify", env=wrong, check=3).returncode == 3
    assert repo.snapshot() == before


def test_status_after_budget_exhausted_shows_the_last_round(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"budget": {"max_iterations": 3}}, mode="never")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["gate"], row["budget_used"]["iterations"]) == ("budget_exhausted", 3)
    assert (row["step"], row["iteration"]) == ("build", 3)
    line = repo.harness("status", check=0).stdout
    assert line.startswith("g1 needs_attention step=build iteration=3 ")


def test_status_after_tamper_does_not_name_the_judge(managed: ManagedFactory) -> None:
    repo = managed(mode="tamper-owners")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["step"], row["iteration"]) == (
        "needs_attention",
        "tamper",
        None,
        1,
    )
    assert repo.harness("status", check=0).stdout.startswith(
        "g1 needs_attention step=- iteration=1 "
    )
    assert repo.count("judge") == []
