"""Goal worktrees keep git's split index (performance.md, "Scale"): the big part of the index
is written once, and each later write is the small delta."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, git


def shared_indexes(root: Path, goal_id: str) -> list[Path]:
    return sorted((root / ".git" / "worktrees" / goal_id).glob("sharedindex.*"))


def test_a_goal_worktree_is_split_and_its_shared_index_goes_with_it(
    managed: ManagedFactory,
) -> None:
    repo = managed()
    repo.harness("run", "--max-steps", "2", check=0)
    wt = repo.root / ".harness" / "worktrees" / "g1"
    assert shared_indexes(repo.root, "g1") != []
    # git itself reads the split index: the worktree is clean against the goal branch.
    assert git(wt, "status", "--porcelain") == ""
    # A worktree made before the setting (plain index) is split at its first scan.
    git(wt, "update-index", "--no-split-index")
    for old in shared_indexes(repo.root, "g1"):
        old.unlink()
    repo.harness("run", "--max-steps", "1", check=0)
    assert shared_indexes(repo.root, "g1") != []
    # Removing the worktree removes its admin folder, shared index included.
    git(repo.root, "worktree", "remove", "--force", str(wt))
    assert not (repo.root / ".git" / "worktrees" / "g1").exists()


@pytest.mark.parametrize("loss", ["shared index lost", "index cut"])
def test_an_index_git_cannot_read_is_made_again_from_head(
    managed: ManagedFactory, loss: str
) -> None:
    """A power cut can lose the shared index or cut the index (git fsyncs neither under
    core.fsync=committed): git then refuses every command that reads it, and the goal
    would be stuck. The next run makes the index again from HEAD and goes on."""
    repo = managed()
    repo.harness("run", "--max-steps", "2", check=0)
    wt = repo.root / ".harness" / "worktrees" / "g1"
    if loss == "shared index lost":
        for shared in shared_indexes(repo.root, "g1"):
            shared.unlink()
    else:
        index = repo.root / ".git" / "worktrees" / "g1" / "index"
        index.write_bytes(index.read_bytes()[:20])
    broken = subprocess.run(["git", "status"], cwd=wt, capture_output=True, text=True)
    assert broken.returncode == 128, broken.stderr
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "2"]  # the run went on where it was, nothing twice
    assert repo.harness("verify", check=0).stdout.startswith("ok g1")
