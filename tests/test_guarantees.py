"""One test per guarantee (design G1-G6), each failing when its guarantee breaks."""

from __future__ import annotations

import hashlib
import signal
import time

import pytest

from harness.record.cell import Spend, cell_bytes, parse_cell, read_cell
from harness.trust.secret import Secret
from tests.managed import SECRET, ManagedFactory, alive, base_goal, git, wait_for

# The guarantees hold as users run: every step contained (tests/conftest.py, `contained_steps`).
pytestmark = pytest.mark.usefixtures("contained_steps")


def test_g1_resume_after_kill(managed: ManagedFactory) -> None:
    """kill -9 during a build: the next run continues the same iteration; nothing finished reruns."""
    repo = managed(goal=base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}})
    proc, _ = repo.start_hanging_run()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    repo.release_build()
    assert repo.status()["status"] == "paused" and repo.status()["iteration"] == 1
    assert " g1 #3 resumed" in repo.harness("run", check=0).stdout
    assert repo.count("build") == ["1", "1", "2"]  # the cut-off build ran again, then the repair
    assert repo.count("judge") == ["1", "2"]
    assert repo.status()["gate"] == "ship"


def test_g1_finished_step_is_never_run_again(managed: ManagedFactory) -> None:
    """Killed right after the build's finish is appended (before the cell or a commit)."""
    repo = managed()
    repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "after_append@3"}, check=-9)
    assert repo.count("build") == ["1"]
    out = repo.harness("run", check=0).stdout
    assert repo.count("build") == ["1", "2"]
    assert "build[1] started" not in out
    assert repo.status()["status"] == "completed"


def test_g2_budget_is_cumulative_across_restarts(managed: ManagedFactory) -> None:
    """N fresh processes, with kills between them, spend one budget of two builds."""
    repo = managed(goal=base_goal() | {"budget": {"max_iterations": 2}}, mode="never")
    repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "in_judge"}, check=-9)
    for _ in range(6):
        repo.harness("run", "--max-steps", "1", check=0)
    repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "after_commit"}, check=None)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "budget_exhausted")
    assert repo.count("build") == ["1", "2"]
    assert row["budget_used"]["iterations"] == 2


def test_g2_untrustworthy_budget_refuses_to_run(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    key = Secret(SECRET.encode()).goal_key("g1")
    path = repo.ledger_dir / "state.json"
    cell = read_cell(path, "state.json", "g1", key)
    assert cell is not None
    for limit in (Spend(0, 10, 1.0, 1, 1), Spend(-1, 10, 1.0, 1, 1)):
        bad = cell_bytes(cell.__class__(**{**cell.__dict__, "limit": limit}), key)
        try:
            parse_cell(bad, "state.json", "g1", key)
        except Exception as exc:
            assert type(exc).__name__ == "TrustFailure" and "not a valid budget amount" in str(exc)
        else:
            raise AssertionError("a zero or negative budget was accepted")
        path.write_bytes(bad)
        repo.harness("run", check=3)
    nan = path.read_bytes().replace(b'"cost_usd":0.25', b'"cost_usd":NaN')
    path.write_bytes(nan)
    repo.harness("run", check=3)
    path.unlink()
    repo.harness("run", check=3)
    assert repo.count("build") == ["1"]


def test_g3_stuck_goal_halts_visibly(managed: ManagedFactory) -> None:
    repo = managed(mode="nothing")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "no_progress")
    assert repo.harness("status", "--check", check=11)
    head = git(repo.worktree, "rev-parse", "HEAD")
    assert repo.harness("run", check=0).stdout == ""
    assert git(repo.worktree, "rev-parse", "HEAD") == head


def test_g4_never_ships_on_its_own(managed: ManagedFactory) -> None:
    repo = managed(
        goal=base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}}, mode="fix-on-1"
    )
    for _ in range(3):
        repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    assert repo.harness("status", "--check", check=10)
    assert not (repo.worktree / "SHIPPED").exists()
    assert "ship[" not in repo.harness("replay", "g1", check=0).stdout


def test_g5_only_an_owner_approved_goal_runs(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    # Waiting for approval is not an error (exit 0), but nothing runs.
    assert "waiting for approval" in repo.harness("run", check=0).stderr
    repo.harness("approve", "g1", "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve")
    repo.commit_goal_change(base_goal() | {"budget": {"max_iterations": 9}})
    assert "changed after it was approved" in repo.harness("run", check=0).stderr
    assert repo.count("build") == []


def test_g5_withdrawn_approval_stops_a_started_goal(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    git(repo.root, "rm", "-q", "goals/g1.approval")
    git(repo.root, "commit", "-qm", "withdraw the approval")
    assert "waiting for approval: goals/g1.approval: goal g1 is not approved" in (
        repo.harness("run", check=0).stderr
    )
    assert repo.count("build") == ["1"] and repo.count("judge") == []


def test_g6_record_replays_byte_identical_and_tampering_is_found(managed: ManagedFactory) -> None:
    repo = managed()
    live = repo.harness("run", check=0).stdout
    assert live and live == repo.harness("replay", "g1", "--format", "text", check=0).stdout
    report = git(repo.worktree, "show", "HEAD:ledger/g1/report.md") + "\n"
    assert report == repo.harness("replay", "g1", "--format", "md", check=0).stdout
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    data = segment.read_bytes()
    segment.write_bytes(data.replace(b'"turns":2', b'"turns":1', 1))
    assert "000001.jsonl: line 3" in repo.harness("verify", check=3).stdout
    assert hashlib.sha256(data).hexdigest() != hashlib.sha256(segment.read_bytes()).hexdigest()


def test_g1_sigterm_during_build_ends_the_agent_and_pauses(managed: ManagedFactory) -> None:
    repo = managed()
    proc, agent_pid = repo.start_hanging_run()
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "paused" in err
    wait_for(lambda: not alive(agent_pid), seconds=5)
    assert repo.status()["status"] == "paused"
    repo.release_build()
    out = repo.harness("run", check=0).stdout
    assert "build[1] was cut off" in out
    assert repo.status()["status"] == "completed"
    assert "interrupted by SIGTERM" in repo.harness("replay", "g1", check=0).stdout


def test_g1_kill_9_leaves_no_agent_behind(managed: ManagedFactory) -> None:
    repo = managed()
    proc, agent_pid = repo.start_hanging_run()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_for(lambda: not alive(agent_pid), seconds=5)


def test_the_guarantee_tests_run_their_steps_contained(
    managed: ManagedFactory, contained_steps: str
) -> None:
    """The tests above hold as users run: each step under bubblewrap, the scripted agent
    writing its counters through the folder the test repository's config binds."""
    import json

    repo = managed()
    repo.harness("run", check=0)
    lines = [
        json.loads(x)["e"]
        for p in sorted((repo.ledger_dir / "events").iterdir())
        for x in p.read_text().splitlines()
    ]
    boxes = {e["data"]["sandbox"] for e in lines if e["type"] == "step.started"}
    assert boxes == ({"off"} if contained_steps == "off" else {"bwrap"})
    assert repo.count("build") and repo.status()["status"] == "completed"  # counters reached
