"""Remote with a real bare remote and two clones: fast-forward-only pushes, and sync
bringing the local goal branch to the remote's state as its docstring says."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.errors import InvalidInput
from harness.store.gitrepo import Repo
from harness.store.remote import LeaseLost, Remote
from harness.store.worktree import add_worktree
from tests.managed import ManagedRepo, git

BRANCH = "harness/g1"


@dataclass(frozen=True)
class Clones:
    bare: Path
    a: Remote
    b: Remote

    def remote_head(self) -> str | None:
        proc = subprocess.run(
            ["git", "--git-dir", str(self.bare), "rev-parse", "-q", "--verify", BRANCH],
            capture_output=True,
            text=True,
        )
        return proc.stdout.strip() or None


def _commit(remote: Remote, message: str, branch: str = BRANCH) -> str:
    """A commit on `branch` in that clone, made without touching its checkout."""
    root = remote.repo.root
    parent = remote.repo.rev_parse(f"refs/heads/{branch}") or remote.repo.rev_parse("HEAD")
    tree = git(root, "rev-parse", f"{parent}^{{tree}}")
    commit = git(root, "commit-tree", tree, "-p", str(parent), "-m", message)
    git(root, "update-ref", f"refs/heads/{branch}", commit)
    return commit


@pytest.fixture
def clones(managed: Callable[..., ManagedRepo], tmp_path: Path) -> Clones:
    seed = managed(approve=False)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed.root), str(bare))
    made = []
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", str(bare), name)
        made.append(Remote.check(Repo.discover(tmp_path / name), "origin"))
    return Clones(bare, *made)


def test_check_refuses_an_unknown_remote(clones: Clones) -> None:
    repo = clones.a.repo
    with pytest.raises(InvalidInput) as caught:
        Remote.check(repo, "nowhere")
    assert (
        str(caught.value)
        == f"--push: 'nowhere' is not a remote of {repo.root} (see `git remote -v`)"
    )


def test_push_moves_the_remote_and_the_tracking_ref(clones: Clones) -> None:
    first = _commit(clones.a, "one")
    assert clones.a.push(BRANCH).ok is True
    assert clones.remote_head() == first
    assert clones.a.repo.rev_parse(clones.a.tracking(BRANCH)) == first
    second = _commit(clones.a, "two")
    assert clones.a.push(BRANCH).ok is True
    assert clones.remote_head() == second


@pytest.mark.parametrize("shape", ["behind", "diverged"])
def test_push_that_is_not_a_fast_forward_is_refused(clones: Clones, shape: str) -> None:
    first = _commit(clones.a, "one")
    clones.a.push(BRANCH)
    clones.b.fetch("harness/")
    git(clones.b.repo.root, "branch", "-q", BRANCH, first)
    ahead = _commit(clones.a, "two")
    clones.a.push(BRANCH)
    if shape == "diverged":
        _commit(clones.b, "b's own")
    assert clones.b.push(BRANCH).ok is False
    assert clones.remote_head() == ahead
    assert clones.b.repo.rev_parse(clones.b.tracking(BRANCH)) == first  # not moved


def test_fetch_takes_only_the_goal_branches_and_prunes(clones: Clones) -> None:
    goal = _commit(clones.a, "goal")
    _commit(clones.a, "other", branch="topic")
    git(clones.a.repo.root, "push", "-q", "origin", BRANCH, "topic")
    clones.b.fetch("harness/")
    assert clones.b.repo.rev_parse(clones.b.tracking(BRANCH)) == goal
    assert clones.b.repo.rev_parse("refs/remotes/origin/topic") is None
    git(clones.a.repo.root, "push", "-q", "origin", f":{BRANCH}")
    clones.b.fetch("harness/")
    assert clones.b.repo.rev_parse(clones.b.tracking(BRANCH)) is None


def _sync(remote: Remote) -> None:
    remote.fetch("harness/")
    remote.sync(BRANCH, remote.repo.worktree_path("g1"))


def _local(remote: Remote) -> str | None:
    return remote.repo.rev_parse(f"refs/heads/{BRANCH}")


def test_sync_without_a_remote_branch_changes_nothing(clones: Clones) -> None:
    local = _commit(clones.b, "local only")
    _sync(clones.b)
    assert (_local(clones.b), clones.remote_head()) == (local, None)


def test_sync_makes_the_missing_local_branch(clones: Clones) -> None:
    remote = _commit(clones.a, "one")
    clones.a.push(BRANCH)
    _sync(clones.b)
    assert _local(clones.b) == remote


def test_sync_pushes_local_commits_ahead_of_the_remote(clones: Clones) -> None:
    _commit(clones.b, "one")
    clones.b.push(BRANCH)
    ahead = _commit(clones.b, "left by a run that died before pushing")
    _sync(clones.b)
    assert clones.remote_head() == ahead == _local(clones.b)


@pytest.mark.parametrize("shape", ["behind", "diverged"])
def test_sync_takes_the_remote_state_when_not_ahead(clones: Clones, shape: str) -> None:
    first = _commit(clones.a, "one")
    clones.a.push(BRANCH)
    _sync(clones.b)
    won = _commit(clones.a, "another runner's step")
    clones.a.push(BRANCH)
    if shape == "diverged":
        _commit(clones.b, "this runner's dropped step")
    _sync(clones.b)
    assert (_local(clones.b), clones.remote_head()) == (won, won)
    assert first != won


def test_sync_resets_the_worktree_of_a_runner_that_lost(clones: Clones) -> None:
    _commit(clones.a, "one")
    clones.a.push(BRANCH)
    _sync(clones.b)
    wt = add_worktree(clones.b.repo, clones.b.repo.worktree_path("g1"), BRANCH, "HEAD")
    (wt.path / "mine.txt").write_text("dropped\n")
    wt.commit("this runner's step")
    (wt.path / "untracked.txt").write_text("dropped too\n")
    won = _commit(clones.a, "another runner's step")
    clones.a.push(BRANCH)
    _sync(clones.b)
    assert (wt.head(), clones.remote_head()) == (won, won)
    assert not (wt.path / "mine.txt").exists() and not (wt.path / "untracked.txt").exists()


def test_publish_that_loses_the_race_resets_and_raises(clones: Clones) -> None:
    _commit(clones.a, "one")
    clones.a.push(BRANCH)
    _sync(clones.b)
    wt = add_worktree(clones.b.repo, clones.b.repo.worktree_path("g1"), BRANCH, "HEAD")
    won = _commit(clones.a, "another runner's step")
    clones.a.push(BRANCH)
    wt.commit("this runner's step")
    with pytest.raises(LeaseLost) as caught:
        clones.b.publish(BRANCH, wt)
    assert str(caught.value) == (
        f"{BRANCH}: another runner advanced the goal first; leaving it to them"
    )
    assert (wt.head(), clones.remote_head()) == (won, won)
    assert LeaseLost.exit_code == 4
