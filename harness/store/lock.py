"""Per-goal locks on one machine: an flock on a file in the common git folder.

The kernel drops an flock when its holder dies, so a crashed run never leaves a stale
lock behind; the file's content (the holder's pid) is only for messages.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from harness.errors import Busy


class GoalLock:
    def __init__(self, folder: Path, goal_id: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{goal_id}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise Busy(f"goal {self.path.stem} is busy: process {holder} is running it") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def acquire_waiting(self, seconds: float) -> None:
        """Acquire, retrying until `seconds` have passed (then Busy)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.acquire()
                return
            except Busy:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def holder(self) -> int | None:
        """The pid written by the current holder, if it is a live harness process."""
        try:
            pid = int(self.path.read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            return None
        return pid if b"harness" in cmdline else None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def held_elsewhere(self) -> bool:
        """True when another process holds the lock right now (a shared probe that writes
        nothing, so it never looks like a holder itself)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def __enter__(self) -> GoalLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def lock_holder(path: Path) -> str | None:
    """The pid written in a lock file whose flock another process holds now, else None.

    A shared, non-blocking probe on a read-only descriptor: it neither waits nor writes. A
    run that tries the lock in the same instant sees the goal as busy and skips it once.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.read(fd, 32).decode("ascii", "replace").strip() or "?"
    finally:
        os.close(fd)  # closing also drops the probe's own lock
    return None


@contextlib.contextmanager
def worktree_admin(common_dir: Path) -> Iterator[None]:
    """git's list of worktrees changed by one harness process at a time (waiting).

    `git worktree prune` removes the folder of a worktree another process's `git worktree
    add` has just made and not yet marked (`could not open .../locked`): with `run --jobs`
    goals start side by side, so each prune, add and remove holds this flock."""
    folder = common_dir / "harness"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "worktrees.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
