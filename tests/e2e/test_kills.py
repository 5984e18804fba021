"""Repeated kill -9 at random moments: verify passes after every kill, and a plain run then
completes the goal at the same iteration as an uninterrupted run."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from tests.managed import ManagedFactory, git


def test_random_kills_then_a_plain_run(managed: ManagedFactory) -> None:
    repo = managed()
    chance = random.Random(20261129)
    for _ in range(8):
        proc = repo.spawn("run")
        time.sleep(chance.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if repo.worktree.exists():
            repo.verified()
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["iteration"]) == ("completed", 2)
    repo.harness("verify", check=0)


def test_stale_index_lock_left_by_a_kill_is_cleared(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", "--max-steps", "1", check=0)
    admin = Path(git(repo.worktree, "rev-parse", "--absolute-git-dir"))
    (admin / "index.lock").write_text("")
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_unfinished_worktree_add_is_made_again(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", "--max-steps", "1", check=0)
    admin = Path(git(repo.worktree, "rev-parse", "--absolute-git-dir"))
    (admin / "locked").write_text("initializing\n")
    (repo.worktree / "judge.py").unlink()  # an unfinished checkout misses files
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert (repo.worktree / "judge.py").exists()
