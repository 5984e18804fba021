"""A goal's git worktree: opened only when it is on the goal's branch, or created; and the
worktrees git has registered."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import TrustFailure
from harness.store.gitrepo import Repo, Worktree, run_git


def open_worktree(repo: Repo, goal_id: str, branch: str) -> Worktree | None:
    """The goal's worktree if it exists, checked to be on `branch`."""
    return checked_worktree(repo.worktree_path(goal_id), branch)


def checked_worktree(path: Path, branch: str) -> Worktree | None:
    """The worktree at `path` if it exists, checked to be on `branch` (TrustFailure when it
    is on another branch or a detached HEAD: nothing there is used or moved)."""
    if not (path / ".git").exists():
        return None
    wt = Worktree(path)
    actual = (
        run_git(["symbolic-ref", "-q", "--short", "HEAD"], path, check=False)
        .stdout.decode()
        .strip()
    )
    if actual != branch and _head_file_names(path, branch):
        raise TrustFailure(
            f"{path}: the goal branch {branch!r} names no commit (its ref is empty or broken, as "
            "a power cut can leave it); the worktree and its uncommitted events are intact: do "
            "not remove it; fetch the goal branch from the remote or another clone, or run "
            "`git fsck` to see what was lost"
        )
    if actual != branch:
        raise TrustFailure(
            f"{path}: the worktree is on {actual or 'a detached HEAD'!r}, not {branch!r}; "
            "check it out again or remove it with `git worktree remove`"
        )
    return wt


def _head_file_names(path: Path, branch: str) -> bool:
    """Whether the worktree's HEAD file names `branch` (read directly: git refuses to
    resolve a HEAD whose branch ref is broken)."""
    try:
        link = (path / ".git").read_text(encoding="utf-8").strip()
        gitdir = path / link.removeprefix("gitdir:").strip()
        return (gitdir / "HEAD").read_text(encoding="utf-8").strip() == f"ref: refs/heads/{branch}"
    except (OSError, UnicodeDecodeError):
        return False


def ensure_worktree(repo: Repo, goal_id: str, branch: str, base: str) -> Worktree:
    """The goal's worktree, created (from `branch`, or a new `branch` at `base`)."""
    existing = open_worktree(repo, goal_id, branch)
    if existing is not None:
        return existing
    return repo.add_worktree(repo.worktree_path(goal_id), branch, base)


@dataclass(frozen=True)
class RegisteredWorktree:
    """One entry of `git worktree list --porcelain`."""

    path: Path
    head: str | None
    branch: str | None  # the full ref (`refs/heads/…`); None on a detached HEAD
    prunable: str | None  # git's reason ("" when it gives none); None when not prunable


def list_worktrees(repo: Repo) -> list[RegisteredWorktree]:
    """Every worktree git has registered for the repository, the main one first."""
    listing = run_git(["worktree", "list", "--porcelain"], repo.root).stdout
    return parse_worktrees(listing.decode("utf-8", "replace"))


def parse_worktrees(porcelain: str) -> list[RegisteredWorktree]:
    """`git worktree list --porcelain`: blocks of `key value` lines, one block per entry."""
    entries = []
    for block in porcelain.strip().split("\n\n"):
        pairs = (line.partition(" ") for line in block.splitlines() if line.strip())
        fields = {key: value for key, _, value in pairs}
        if "worktree" in fields:
            entries.append(
                RegisteredWorktree(
                    Path(fields["worktree"]),
                    fields.get("HEAD"),
                    fields.get("branch"),
                    fields.get("prunable"),
                )
            )
    return entries
