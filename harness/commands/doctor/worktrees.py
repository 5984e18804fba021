"""Doctor's checks of the goal worktrees (each on its goal branch) and the lock files."""

from __future__ import annotations

from pathlib import Path

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.store.gitrepo import Repo
from harness.store.lock import lock_holder
from harness.store.worktree import RegisteredWorktree, list_worktrees


def worktrees(repo: Repo, prefix: str) -> Finding:
    ours = _goal_worktrees(repo)
    wrong = [p for wt in ours if (p := _off_branch(wt, prefix))]
    if wrong:
        fix = "check the goal branch out there again, or `git worktree remove <path>` (the branch keeps the record)"
        return fail("worktrees", "; ".join(wrong), fix, trust=True)
    stale = [p for wt in ours if (p := _stale(wt))] + _strays(repo, ours)
    if stale:
        fix = "`git worktree prune`; move a stray folder away (it may hold work): harness run recreates worktrees"
        return Finding("worktrees", WARN, "; ".join(stale), fix)
    return Finding("worktrees", OK, f"{len(ours)} goal worktree(s), each on its goal branch")


def _worktrees_folder(repo: Repo) -> Path:
    return repo.root / ".harness" / "worktrees"


def _goal_worktrees(repo: Repo) -> list[RegisteredWorktree]:
    """The registered worktrees that live in .harness/worktrees/."""
    folder = _worktrees_folder(repo)
    return [wt for wt in list_worktrees(repo) if wt.path.parent == folder]


def _stale(wt: RegisteredWorktree) -> str | None:
    if wt.prunable is None:
        return None
    return f"{wt.path} is a stale entry ({wt.prunable or 'its folder is gone'})"


def _off_branch(wt: RegisteredWorktree, prefix: str) -> str | None:
    """`harness run` refuses a goal whose worktree is not on the goal's branch (exit 3)."""
    expected = f"{prefix}{wt.path.name}"
    actual = (wt.branch or "").removeprefix("refs/heads/")
    if wt.prunable is not None or actual == expected:
        return None
    return f"{wt.path} is on {actual or 'a detached HEAD'}, not {expected}; harness run refuses it"


def _strays(repo: Repo, ours: list[RegisteredWorktree]) -> list[str]:
    """Folders in .harness/worktrees/ that git does not know: `harness run` cannot reuse them."""
    folder = _worktrees_folder(repo)
    if not folder.is_dir():
        return []
    registered = {wt.path.name for wt in ours}
    return [
        f"{p} is not a git worktree"
        for p in sorted(folder.iterdir())
        if p.is_dir() and p.name not in registered
    ]


def locks(repo: Repo) -> Finding:
    folder = repo.common_dir / "harness" / "locks"
    files = sorted(folder.glob("*.lock")) if folder.is_dir() else []
    held = [f"{p.stem} by process {pid}" for p in files if (pid := lock_holder(p))]
    if not held:
        # A dead holder's flock is dropped by the kernel: a lock file alone is never stale.
        return Finding("locks", OK, f"{len(files)} lock file(s), none held")
    return Finding("locks", OK, f"held now: {', '.join(held)}")
