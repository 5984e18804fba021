"""`harness ship` and `unpark` refuse what would be signed and then do nothing: a decision
for a goal whose file changed since the gate was reached (issue 30, item 9)."""

from __future__ import annotations

import hashlib

import yaml

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"']}


def _parked(managed: ManagedFactory) -> ManagedRepo:
    repo = managed(mode="fix-on-1", goal=base_goal() | {"ship": SHIP})
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    return repo


def _edit(repo: ManagedRepo, approve: bool) -> str:
    goal = base_goal() | {"ship": SHIP, "objective": "Make value.txt say right, twice.\n"}
    path = repo.root / "goals" / "g1.yaml"
    path.write_text(yaml.safe_dump(goal, sort_keys=False))
    if approve:
        repo.harness("approve", "g1", "--key", str(repo.key.private), check=0)
    git(repo.root, "commit", "-qam", "edit the parked goal")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ship_after_an_unapproved_edit_is_refused_before_signing(managed: ManagedFactory) -> None:
    repo = _parked(managed)
    before = (repo.root / "goals" / "g1.approval").read_bytes()
    sha = _edit(repo, approve=False)
    proc = repo.harness("ship", "g1", "--key", str(repo.key.private), check=3)
    [message] = proc.stderr.splitlines()
    assert message.startswith(
        f"harness: goal g1: goals/g1.yaml on refs/heads/main changed since its approval (sha256 {sha[:12]}"
    )
    assert "re-approve first: `harness approve g1 --key KEY`" in message
    assert message.endswith("(nothing was written)") and proc.stdout == ""
    assert (repo.root / "goals" / "g1.approval").read_bytes() == before
    assert repo.count("ship") == [] and repo.status()["status"] == "parked_at_eyes"


def test_ship_after_an_approved_edit_asks_for_the_revision_first(managed: ManagedFactory) -> None:
    repo = _parked(managed)
    sha = _edit(repo, approve=True)
    proc = repo.harness("ship", "g1", "--key", str(repo.key.private), check=3)
    assert f"was changed and approved since the gate was reached (sha256 {sha[:12]}" in proc.stderr
    assert "`harness run g1` records the revision first" in proc.stderr
    repo.harness("run", check=0)  # the revision is recorded; the goal still waits at ship
    assert repo.status()["gate"] == "ship"
    out = repo.harness("ship", "g1", "--key", str(repo.key.private), check=0).stdout
    assert "signed `ship` for g1" in out
    assert repo.count("ship") == ["shipped"] and repo.status()["status"] == "completed"
