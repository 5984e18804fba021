"""What ships is exactly what the owner reviewed (issue 13, done-when 1-3).

A commit pushed to a goal branch by anyone but the harness, or a worktree edited after the
harness committed, stops the goal at `tamper` before any decision is used or step runs; the
ship step runs in a fresh checkout of the signed commit, never in the agent's worktree.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

# The ship step notes where it ran and what it saw, outside the repository.
SHIP = {
    "run": [
        "sh",
        "-c",
        'echo shipped >> "$TEST_COUNTER_DIR/ship.log"; git rev-parse HEAD > "$TEST_COUNTER_DIR/ship-head";'
        ' ls -A > "$TEST_COUNTER_DIR/ship-files"; pwd > "$TEST_COUNTER_DIR/ship-cwd"',
    ]
}


def _clone(seed: ManagedRepo, bare: Path, path: Path) -> ManagedRepo:
    subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
    return ManagedRepo(path, seed.key, seed.counters, seed.goal_id, dict(seed.env))


def _remote_world(managed: ManagedFactory, tmp_path: Path) -> tuple[ManagedRepo, Path, Path]:
    """A seed repository, its bare remote, and a runner's clone of it."""
    seed = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    runner = _clone(seed, bare, tmp_path / "runner")
    return runner, bare, tmp_path


def _push_foreign_commit(bare: Path, where: Path, name: str, text: str) -> str:
    """A committer with no key fast-forwards harness/g1 on the remote; returns the commit."""
    subprocess.run(["git", "clone", "-q", str(bare), str(where)], check=True)
    git(where, "checkout", "-q", "harness/g1")
    (where / name).parent.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(text)
    git(where, "add", "-A")
    git(where, "commit", "-qm", "a small fix")
    git(where, "push", "-q", "origin", "harness/g1")
    return git(where, "rev-parse", "HEAD")


def _remote_head(bare: Path) -> str:
    return git(bare, "rev-parse", "harness/g1")


def _gate_detail(repo: ManagedRepo) -> str:
    return str(json.loads((repo.ledger_dir / "state.json").read_text())["gate_detail"])


def _sign_ship_without_secret(repo: ManagedRepo) -> None:
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("ship", "g1", "--key", str(repo.key.private), env=env, check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "ship g1")


def test_fast_forward_push_to_a_parked_goal_never_ships(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner, bare, _ = _remote_world(managed, tmp_path)
    runner.harness("run", "--push", "origin", check=0)
    assert runner.status()["gate"] == "ship"
    pushed = _push_foreign_commit(bare, tmp_path / "mallory", "app/deploy.sh", "rm -rf /srv\n")
    _sign_ship_without_secret(runner)  # the owner reviewed the gate commit, not the push
    proc = runner.harness("run", "--push", "origin", check=0)
    row = runner.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper"), proc.stdout
    assert _gate_detail(runner) == (
        f"the goal branch head {pushed[:12]} holds changes the harness did not commit: "
        "app/deploy.sh"
    )
    assert runner.count("ship") == []
    assert not (tmp_path / "counters" / "ship-head").exists()
    # The record says so on the remote too, and the decision is not used by a later run.
    assert git(bare, "rev-parse", "harness/g1~1") == pushed
    runner.harness("run", "--push", "origin", check=0)
    assert runner.count("ship") == [] and runner.status()["gate"] == "tamper"


def test_migration_pushed_between_runs_stops_before_the_next_step(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner, bare, _ = _remote_world(managed, tmp_path)
    runner.harness("run", "--push", "origin", "--max-steps", "1", check=0)
    assert runner.count("build") == ["1"] and runner.count("judge") == []
    before = _remote_head(bare)
    migration = "migrations/0002_drop.sql"
    pushed = _push_foreign_commit(bare, tmp_path / "mallory", migration, "DROP TABLE users;\n")
    assert git(bare, "rev-parse", "harness/g1~1") == before
    runner.harness("run", "--push", "origin", check=0)
    row = runner.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper")
    assert _gate_detail(runner) == (
        f"the goal branch head {pushed[:12]} holds changes the harness did not commit: {migration}"
    )
    assert runner.count("judge") == [] and runner.count("build") == ["1"]


def _parked(managed: ManagedFactory) -> ManagedRepo:
    repo = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    return repo


def test_worktree_edited_after_parking_never_ships(managed: ManagedFactory) -> None:
    repo = _parked(managed)
    target = repo.worktree / "value.txt"
    target.write_text("edited after the owner looked\n")
    edited = target.read_bytes()
    proc = repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper"), proc.stdout
    assert _gate_detail(repo) == (
        "the worktree differs from what the harness last committed: value.txt"
    )
    assert repo.count("ship") == []
    assert target.read_bytes() == edited  # kept as evidence, never shipped


def test_ship_runs_in_a_fresh_checkout_of_the_signed_commit(managed: ManagedFactory) -> None:
    repo = _parked(managed)
    cell = json.loads((repo.ledger_dir / "state.json").read_text())
    # An ignored file the owner never saw is not part of any commit, so it never ships.
    (repo.worktree / "__pycache__").mkdir()
    (repo.worktree / "__pycache__" / "planted.pyc").write_bytes(b"\0evil")
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert repo.count("ship") == ["shipped"]
    counters = repo.counters
    assert (counters / "ship-head").read_text().strip() == cell["gate_commit"]
    assert "__pycache__" not in (counters / "ship-files").read_text().split()
    cwd = Path((counters / "ship-cwd").read_text().strip())
    assert cwd != repo.worktree and not cwd.exists()  # removed after the step
    assert git(repo.root, "worktree", "list", "--porcelain").count("worktree ") == 2
    assert repo.status()["status"] == "completed"
