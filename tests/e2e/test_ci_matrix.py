"""Issue 30, item 1: `ci github --matrix` schedules exactly the goals a run would move.

The generated workflow's own `List goals` script runs, as GitHub runs it (no secret, the
goal branches local), against one repository holding a goal in each state; `harness status
--json` says what each needs next (`runnable`, `decision_pending`, `next_run_due`). Times
are set with `HARNESS_NOW`, so "due" and "not due" do not depend on this machine's speed.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.commands.approve import approve
from harness.commands.ci_github import WORKFLOW_PATH, ci_github
from harness.model.yamlload import load_yaml
from harness.trust.approvals import append_record, load_approval_file
from harness.trust.sshsig import sign
from tests.managed import SECRET, ManagedFactory, ManagedRepo, base_goal, git, make_key
from tests.workflows import PINNED

BIN = str(Path(sys.executable).parent)
RECORDED = "2030-01-01T02:00:00Z"  # every run below is made at this time
SHIP = {"run": ["sh", "-c", "true"], "timeout": "60s"}
NO_CHANGE = {"run": [sys.executable, "-c", "print('no change')"], "timeout": "60s"}
ONE_ROUND = {"max_iterations": 1}


def _goals() -> dict[str, dict[str, Any]]:
    """Each goal's file, named for the state it is brought to."""
    return {
        "paused": base_goal("paused"),  # one step, then the process ends: shown as paused
        "parked": base_goal("parked") | {"ship": SHIP},  # at its ship gate, nothing signed
        "shipped": base_goal("shipped") | {"ship": SHIP},  # at its gate, ship signed and pushed
        "due": base_goal("due") | {"every": "1h"},
        "not-due": base_goal("not-due") | {"every": "24h"},
        "failed": base_goal("failed")
        | {"every": "24h", "build": NO_CHANGE, "budget": ONE_ROUND},  # its run spent its budget
        "attention": base_goal("attention") | {"build": NO_CHANGE, "budget": ONE_ROUND},
        "done": base_goal("done"),
        "unapproved": base_goal("unapproved"),
    }


def _repo_in_every_state(managed: ManagedFactory) -> ManagedRepo:
    repo = managed(goal=base_goal("fresh"), mode="fix-on-1")  # approved, never run
    for goal_id, goal in _goals().items():
        (repo.root / "goals" / f"{goal_id}.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
        if goal_id != "unapproved":
            approve(repo.root, goal_id, repo.key.private, repo.env, io.StringIO())
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "a goal for every state")
    at = repo.env | {"HARNESS_NOW": RECORDED}
    repo.harness("run", "paused", "--max-steps", "1", check=0, env=at)
    ids = ["parked", "shipped", "due", "not-due", "failed", "attention", "done"]
    repo.harness("run", *ids, check=0, env=at)
    # The owner's laptop: no secret, signs the ship decision; it reaches the runner's
    # checkout as a commit on the control branch (as `harness ship --push` pushes it).
    laptop = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("ship", "shipped", "--key", str(repo.key.private), check=0, env=laptop)
    git(repo.root, "add", "goals/shipped.approval")
    git(repo.root, "commit", "-qm", "ship decision, signed on a laptop")
    return repo


def _listed(repo: ManagedRepo, tmp_path: Path, now: str) -> list[str]:
    """The ids the workflow's `goals` job hands the matrix at `now`."""
    assert ci_github(repo.root, io.StringIO(), force=True, matrix=True, install=PINNED) == 0
    workflow = load_yaml((repo.root / WORKFLOW_PATH).read_bytes(), WORKFLOW_PATH)
    assert isinstance(workflow, dict)
    steps = workflow["jobs"]["goals"]["steps"]
    script = next(s for s in steps if s.get("name") == "List goals")["run"]
    output = tmp_path / "github-output"
    output.unlink(missing_ok=True)
    env = {  # as the job has it: no secret
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "GITHUB_OUTPUT": str(output),
        "HARNESS_NOW": now,
    }
    subprocess.run(["bash", "-c", script], cwd=repo.root, env=env, check=True)
    text = output.read_text()
    assert text.startswith("ids=") and text.endswith("\n")
    return list(json.loads(text[len("ids=") :]))


def _rows(repo: ManagedRepo, now: str) -> dict[str, dict[str, Any]]:
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"} | {"HARNESS_NOW": now}
    shown = repo.harness("status", "--json", check=0, env=env)
    return {row["id"]: row for row in json.loads(shown.stdout)}


def test_the_matrix_picks_exactly_the_goals_a_run_would_move(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = _repo_in_every_state(managed)
    later = "2030-01-01T04:00:00Z"  # the 1h goal is due, the 24h ones are not
    rows = _rows(repo, later)
    shown = {goal_id: row["status"] for goal_id, row in rows.items()}
    assert shown == {
        "attention": "needs_attention",
        "done": "completed",
        "due": "completed",
        "failed": "failed",
        "fresh": "pending",
        "not-due": "completed",
        "parked": "parked_at_eyes",
        "paused": "paused",
        "shipped": "parked_at_eyes",
        "unapproved": "pending",
    }
    runnable = {goal_id for goal_id, row in rows.items() if row["runnable"]}
    assert runnable == {"due", "fresh", "paused", "shipped"}
    pending = {goal_id for goal_id, row in rows.items() if row["decision_pending"]}
    assert pending == {"attention", "parked"}
    assert rows["unapproved"]["waiting_for_approval"] is True
    assert rows["done"]["next_run_due"] is None and rows["parked"]["next_run_due"] is None
    recorded = rows["not-due"]["run_started_at"]
    assert recorded.startswith("2030-01-01T02:00:")
    assert rows["not-due"]["next_run_due"] == "2030-01-02" + recorded[len("2030-01-01") :]
    assert _listed(repo, tmp_path, later) == ["due", "fresh", "paused", "shipped"]
    # Half an hour after the runs, the hourly goal is not due yet either.
    assert _listed(repo, tmp_path, "2030-01-01T02:30:00Z") == ["fresh", "paused", "shipped"]


def test_a_decision_no_owner_signed_does_not_make_a_parked_goal_runnable(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """A ship record bound to the parked state, signed by a key that is not an owner's: the
    runner ignores it, so the matrix does not schedule the goal, which still waits."""
    repo = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    repo.harness("run", check=0)
    approval = repo.root / "goals" / "g1.approval"
    before = approval.read_bytes()
    laptop = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0, env=laptop)
    statement = load_approval_file(approval, str(approval))[-1].statement
    approval.write_bytes(before)
    stranger = make_key(tmp_path, "stranger")
    append_record(approval, statement, sign(statement.to_bytes(), stranger.private))
    git(repo.root, "add", "goals/g1.approval")
    git(repo.root, "commit", "-qm", "a ship decision no owner signed")
    row = _rows(repo, RECORDED)["g1"]
    assert (row["status"], row["runnable"], row["decision_pending"]) == (
        "parked_at_eyes",
        False,
        True,
    )
    assert _listed(repo, tmp_path, RECORDED) == []
    repo.harness("run", "g1", check=0)  # the runner agrees: nothing to do
    assert repo.status()["status"] == "parked_at_eyes"
    assert SECRET not in (repo.root / WORKFLOW_PATH).read_text()
