"""store/remote.py: after a lost race a run fetches each goal's branch again before it syncs
it (remote.md, item 3), and that fetch refuses a branch that went back like the first one."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from harness.errors import TrustFailure
from harness.store.gitrepo import Repo
from harness.store.remote import Remote

BRANCH = "harness/g1"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _commit(repo: Path, text: str) -> str:
    (repo / "file.txt").write_text(text)
    _git(repo, "add", "file.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", text)
    return _git(repo, "rev-parse", "HEAD")


def _setup(tmp_path: Path) -> tuple[Path, Path, Remote]:
    """A bare remote with BRANCH, a clone (our runner, fetched), and another clone (the
    runner that moves the remote meanwhile)."""
    seed = tmp_path / "seed"
    _git(tmp_path, "init", "-q", "-b", "main", str(seed))
    _commit(seed, "one")
    _git(seed, "branch", BRANCH)
    bare = tmp_path / "remote.git"
    _git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for path in (ours, theirs):
        _git(tmp_path, "clone", "-q", str(bare), str(path))
    _git(theirs, "checkout", "-q", BRANCH)
    remote = Remote.check(Repo.discover(ours), "origin")
    remote.fetch("harness/")
    return bare, theirs, remote


def test_after_a_lost_race_the_sync_takes_what_the_remote_holds_now(tmp_path: Path) -> None:
    _, theirs, remote = _setup(tmp_path)
    ours = remote.repo.root
    newer = _commit(theirs, "two")
    _git(theirs, "push", "-q", "origin", BRANCH)
    remote.sync(BRANCH, ours / "no-worktree")  # no race lost yet: the run's first fetch
    assert _git(ours, "rev-parse", BRANCH) != newer
    remote.lost.add("harness/g2")  # lost on another goal in this run
    remote.sync(BRANCH, ours / "no-worktree")
    assert _git(ours, "rev-parse", BRANCH) == newer


def test_a_goal_is_fetched_again_once_a_run(tmp_path: Path) -> None:
    """The catch-up (commands/run.py) refreshes a goal's branch before it looks; when it
    finds nothing to answer, the sync of the same visit does not fetch it a second time."""
    _, theirs, remote = _setup(tmp_path)
    ours = remote.repo.root
    remote.lost.add("harness/g2")
    first = _commit(theirs, "two")
    _git(theirs, "push", "-q", "origin", BRANCH)
    remote.refresh(BRANCH)
    _commit(theirs, "three")
    _git(theirs, "push", "-q", "origin", BRANCH)
    remote.sync(BRANCH, ours / "no-worktree")
    assert _git(ours, "rev-parse", BRANCH) == first


def test_the_second_fetch_refuses_a_branch_that_went_back(tmp_path: Path) -> None:
    bare, theirs, remote = _setup(tmp_path)
    ours = remote.repo.root
    _commit(theirs, "two")
    _git(theirs, "push", "-q", "origin", BRANCH)
    remote.fetch("harness/")
    remote.sync(BRANCH, ours / "no-worktree")
    seen = _git(ours, "rev-parse", BRANCH)
    _git(bare, "update-ref", f"refs/heads/{BRANCH}", f"{seen}~1")  # rolled back
    remote.lost.add("harness/g2")
    with pytest.raises(TrustFailure, match="went back from"):
        remote.sync(BRANCH, ours / "no-worktree")
    assert _git(ours, "rev-parse", BRANCH) == seen
    assert _git(ours, "rev-parse", f"refs/remotes/origin/{BRANCH}") == seen  # kept as seen


def test_a_fetch_that_met_another_runners_ref_lock_is_tried_again(tmp_path: Path) -> None:
    """Two runners of one clone fetch at once: git refuses the second with "cannot lock
    ref" while the first holds the ref's lock (here: a lock file removed 300 ms later)."""
    _, theirs, remote = _setup(tmp_path)
    newer = _commit(theirs, "two")
    _git(theirs, "push", "-q", "origin", BRANCH)
    lock = remote.repo.root / ".git" / "refs" / "remotes" / "origin" / f"{BRANCH}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    timer = threading.Timer(0.3, lock.unlink)
    timer.start()
    try:
        remote.fetch("harness/")
    finally:
        timer.join()
    assert _git(remote.repo.root, "rev-parse", f"refs/remotes/origin/{BRANCH}") == newer
