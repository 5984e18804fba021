"""A goal's git worktree: opened only when it is on the goal's branch, or created."""

from __future__ import annotations

from harness.errors import TrustFailure
from harness.store.gitrepo import Repo, Worktree, run_git


def open_worktree(repo: Repo, goal_id: str, branch: str) -> Worktree | None:
    """The goal's worktree if it exists, checked to be on `branch`."""
    path = repo.worktree_path(goal_id)
    if not (path / ".git").exists():
        return None
    wt = Worktree(path)
    actual = (
        run_git(["symbolic-ref", "-q", "--short", "HEAD"], path, check=False)
        .stdout.decode()
        .strip()
    )
    if actual != branch:
        raise TrustFailure(
            f"{path}: the worktree is on {actual or 'a detached HEAD'!r}, not {branch!r}; "
            "check it out again or remove it with `git worktree remove`"
        )
    return wt


def ensure_worktree(repo: Repo, goal_id: str, branch: str, base: str) -> Worktree:
    """The goal's worktree, created (from `branch`, or a new `branch` at `base`)."""
    existing = open_worktree(repo, goal_id, branch)
    if existing is not None:
        return existing
    return repo.add_worktree(repo.worktree_path(goal_id), branch, base)
