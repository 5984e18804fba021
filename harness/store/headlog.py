"""A goal worktree's HEAD read as files, where git refuses to resolve it: the branch its HEAD
file names, and the commits its HEAD log names. What is said, and how to put things back
without a remote, when the goal branch is deleted or broken (cli.md, "A lost record") or
its head commit was pruned beside a run (remote.md, "Objects pruned during a run")."""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import TrustFailure
from harness.store.gitrepo import run_git
from harness.store.objects import ref_trouble, restore_hint

_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def branch_gone(path: Path, branch: str) -> TrustFailure:
    """The goal branch names no commit while its worktree at `path` is kept on it: a deleted
    branch, or a ref a power cut left empty. Said in one line with how to put it back, never
    as git's "Not a valid object name HEAD" (cli.md, "A lost record")."""
    trouble = ref_trouble(path, f"refs/heads/{branch}") or "names no commit"
    last = _last_logged(path)
    return TrustFailure(
        f"{path}: the goal branch {branch!r} {trouble} while its worktree is kept on it; the "
        "worktree and its uncommitted events are intact: do not remove it; "
        + restore_hint(branch, trouble, last)
    )


def _last_logged(path: Path) -> str | None:
    """The last commit the worktree's HEAD log names, when git still has that commit."""
    moved = _last_move(path)
    return moved[1] if moved is not None and _has_commit(path, moved[1]) else None


def previous_checkpoint(path: Path, head: str) -> str | None:
    """The commit the worktree's HEAD was at before it moved to `head`, when its log says
    so and git still has that commit: where a branch whose head commit was lost (pruned
    beside a run) can be put back, one checkpoint earlier (remote.md, "Objects pruned
    during a run")."""
    moved = _last_move(path)
    if moved is None or moved[1] != head or not _has_commit(path, moved[0]):
        return None
    return moved[0]


def _last_move(path: Path) -> tuple[str, str] | None:
    """(old, new) of the last line of the worktree's HEAD log, read as a file (git will not
    read it while HEAD names what it cannot resolve)."""
    try:
        link = (path / ".git").read_text(encoding="utf-8").strip()
        log = (path / link.removeprefix("gitdir:").strip() / "logs" / "HEAD").read_bytes()
        old, new = (field.decode("ascii") for field in log.splitlines()[-1].split()[:2])
    except (OSError, UnicodeDecodeError, IndexError, ValueError):
        return None
    return (old, new) if _COMMIT_ID.fullmatch(old) and _COMMIT_ID.fullmatch(new) else None


def _has_commit(path: Path, oid: str) -> bool:
    return run_git(["cat-file", "-e", f"{oid}^{{commit}}"], path, check=False).returncode == 0


def head_file_names(path: Path, branch: str) -> bool:
    """Whether the worktree's HEAD file names `branch` (read directly: git refuses to
    resolve a HEAD whose branch ref is broken)."""
    try:
        link = (path / ".git").read_text(encoding="utf-8").strip()
        gitdir = path / link.removeprefix("gitdir:").strip()
        return (gitdir / "HEAD").read_text(encoding="utf-8").strip() == f"ref: refs/heads/{branch}"
    except (OSError, UnicodeDecodeError):
        return False
