"""HARNESS_SHIP_COMMIT: the goal's code change alone, one commit on the base, the same
commit id on every machine that ships the goal."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

# Records the commit it was given and pushes it as a branch, as the guide shows.
SHIP = {
    "run": [
        "sh",
        "-c",
        'echo "$HARNESS_SHIP_COMMIT" >> "$TEST_COUNTER_DIR/ship.log"; '
        'git push -q "$TEST_REMOTE" "$HARNESS_SHIP_COMMIT:refs/heads/feature/g1"',
    ]
}


def _bare(repo: ManagedRepo, name: str) -> Path:
    """A bare remote in the counters folder: a contained ship step pushes only to what the
    config's `sandbox_binds` shows writable (sandbox.md, "Ship"), as that folder is
    (tests/managed.py, `counters_bound`)."""
    path = repo.counters / name
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def test_ship_commit_is_the_change_alone_on_the_base(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    remote = _bare(repo, "remote.git")
    repo.env["TEST_REMOTE"] = str(remote)
    base = git(repo.root, "rev-parse", "main")
    repo.harness("run", check=0)
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert repo.status()["status"] == "completed"

    [shipped] = repo.count("ship")
    assert git(remote, "rev-parse", "feature/g1") == shipped
    assert git(remote, "rev-list", "--parents", "-n", "1", shipped).split() == [shipped, base]
    # Its tree is the gate commit's without ledger/: every entry but that one, unchanged.
    replay = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)
    gate = next(e for e in replay["events"] if e["type"] == "goal.gated")["data"]["commit"]
    entries = git(repo.root, "ls-tree", gate).splitlines()
    assert git(remote, "ls-tree", shipped).splitlines() == [
        e for e in entries if not e.endswith("\tledger")
    ]
    assert any(e.endswith("\tledger") for e in entries)
    names = git(remote, "ls-tree", "-r", "--name-only", shipped).splitlines()
    assert "ledger" not in {n.split("/")[0] for n in names} and "value.txt" in names
    assert git(remote, "diff", "--name-only", base, shipped) == "value.txt"
    assert git(remote, "show", f"{shipped}:value.txt") == "right"
    message = git(remote, "log", "-1", "--format=%an <%ae>|%cn|%B", shipped)
    who, committer, body = message.split("|", 2)
    assert who == "goal-harness <harness@goal-harness.invalid>" and committer == "goal-harness"
    assert body.startswith("Make value.txt say right.\n\nHarness-Goal: g1\nHarness-Ledger: ")


def _clone(source: ManagedRepo, root: Path) -> ManagedRepo:
    """Another machine: a clone of the control branch and the goal branch, its own counters
    (inside the source's, the folder the shared config shows contained steps)."""
    subprocess.run(["git", "clone", "-q", str(source.root), str(root)], check=True)
    git(root, "fetch", "-q", "origin", "refs/heads/harness/g1:refs/heads/harness/g1")
    counters = source.counters / "machine-b"
    counters.mkdir()
    env = source.env | {"TEST_COUNTER_DIR": str(counters)}
    return ManagedRepo(root, source.key, counters, "g1", env)


def test_two_clones_make_the_same_ship_commit(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    remote_a, remote_b = _bare(repo, "a.git"), _bare(repo, "b.git")
    repo.harness("run", check=0)
    # The owner signs without the secret: the decision waits on the control branch.
    unsigned = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("ship", "g1", "--key", str(repo.key.private), env=unsigned, check=0)
    git(repo.root, "add", "goals")
    git(repo.root, "commit", "-qm", "ship g1")
    other = _clone(repo, tmp_path / "machine-b")

    repo.env["TEST_REMOTE"] = str(remote_a)
    repo.harness("run", check=0)
    time.sleep(1.1)  # a commit dated by the clock would differ now
    other.env["TEST_REMOTE"] = str(remote_b)
    other.harness("run", check=0)

    assert repo.status()["status"] == other.status()["status"] == "completed"
    [made_a], [made_b] = repo.count("ship"), other.count("ship")
    assert made_a == made_b
    assert git(remote_a, "rev-parse", "feature/g1") == git(remote_b, "rev-parse", "feature/g1")
