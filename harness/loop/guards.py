"""What a step must not change, and what a killed harness leaves behind to clean up.

The protected paths (the goal files, the record, the lessons) and the git configuration
outside the worktree are checked after every step; the record of the running step's process
group lets the next run end a group whose harness was killed.
"""

from __future__ import annotations

import stat
from pathlib import Path

from harness.loop.steps import end_marked_group
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import run_git
from harness.store.worktree import Worktree

PROTECTED_PREFIXES = ("goals/", ".harness/", "ledger/", "lessons/")


def is_protected(path: str) -> bool:
    return path.startswith(PROTECTED_PREFIXES) or path.endswith(".approval")


class GitConfigGuard:
    """Files outside the worktree through which a step could make the harness's own git
    calls run commands (a filter driver, gpg.program, core.sshCommand) or point them at
    another repository. They are read before a step and compared right after it."""

    def __init__(self, paths: list[Path]) -> None:
        self.before = {path: _read_or_none(path) for path in paths}

    def changed(self) -> list[str]:
        return [str(p) for p, data in self.before.items() if _read_or_none(p) != data]

    def restore(self) -> None:
        for path, data in self.before.items():
            if _read_or_none(path) == data:
                continue
            if data is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, data)


class RecordGuard:
    """The worktree's `ledger/` as the harness left it before a step: every entry's kind,
    size, inode and change time (which no process can set back). A step that changed any
    of it (an edit, a new file, a link in place of a segment) is tampering; the folder is
    put back from the step's start commit before the harness writes one more byte there."""

    def __init__(self, worktree: Worktree) -> None:
        self.worktree = worktree
        self.before = _entries(worktree.path / "ledger")

    def changed(self) -> list[str]:
        after = _entries(self.worktree.path / "ledger")
        names = set(self.before) | set(after)
        return sorted(n for n in names if self.before.get(n) != after.get(n))

    def restore(self) -> None:
        run_git(["clean", "-q", "-f", "-d", "-x", "--", "ledger"], self.worktree.path)
        run_git(["checkout", "-q", "HEAD", "--", "ledger"], self.worktree.path)


class StepWatch:
    """Both guards and the work tree, taken before commands that must only look (the lesson
    checks at the done gate): the same checks as a read-only step's, in one place."""

    def __init__(self, worktree: Worktree) -> None:
        self.worktree = worktree
        self.config = GitConfigGuard(worktree.guarded_files())
        self.record = RecordGuard(worktree)
        self.tree = worktree.work_tree_id()

    def tampered(self) -> str | None:
        """What was changed of git's configuration or the record, put back; or None."""
        touched = self.config.changed()
        if touched:  # before any git call: a changed config could run the agent's commands
            self.config.restore()
            return "changed git configuration: " + ", ".join(touched)
        moved = self.record.changed()
        if moved:  # before one more byte is written there
            self.record.restore()
            return "changed the harness's own record: " + ", ".join(moved)
        return None

    def changed_paths(self) -> list[str]:
        """The work's paths that differ from before (the ledger left out)."""
        after = self.worktree.work_tree_id()
        if after == self.tree:
            return []
        return self.worktree.git("diff", "--name-only", self.tree, after).splitlines()


def _entries(top: Path) -> dict[str, tuple[int, int, int, int]]:
    found: dict[str, tuple[int, int, int, int]] = {}
    if not top.is_symlink() and not top.is_dir():
        return found
    stack = [top]
    while stack:
        path = stack.pop()
        info = path.lstat()
        found[str(path.relative_to(top.parent))] = (
            info.st_mode,
            info.st_size,
            info.st_ino,
            info.st_ctime_ns,
        )
        if stat.S_ISDIR(info.st_mode):
            stack.extend(path.iterdir())
    return found


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


class ChildRecord:
    """The process group of the step running now, kept next to the goal's lock.

    A harness killed with SIGKILL cannot end its step's processes; the next run (holding
    the lock) ends the group it finds recorded before it resumes the goal.
    """

    def __init__(self, folder: Path, goal_id: str) -> None:
        self.path = folder / f"{goal_id}.child"

    def save(self, pid: int, call: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(f"{pid} {call}\n")

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def end_leftover(self) -> None:
        try:
            pid_text, call = self.path.read_text().split()
            pid = int(pid_text)
        except (FileNotFoundError, ValueError):
            return
        end_marked_group(pid, f"HARNESS_CALL_ID={call}")
        self.clear()
