"""`harness cancel <id>`: record a cancellation; the goal stops at `cancelled`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from harness.commands.session import Session, open_session
from harness.errors import Busy, InvalidInput
from harness.loop.clock import SystemClock
from harness.loop.context import checkpoint_key
from harness.loop.recorder import Recorder
from harness.record.events import TERMINAL
from harness.record.hydrate import GoalPaths, committed_view, load
from harness.record.visible import line
from harness.store.lock import GoalLock
from harness.store.worktree import open_worktree
from harness.trust.secret import Secret

STOP_WAIT_S = 60.0


@contextmanager
def _taken_over(lock: GoalLock) -> Iterator[None]:
    """The goal's lock; a run holding it is stopped first (SIGTERM ends its step cleanly)."""
    try:
        lock.acquire()
    except Busy:
        holder = lock.holder()
        if holder is None:
            raise
        os.kill(holder, signal.SIGTERM)
        lock.acquire_waiting(STOP_WAIT_S)
    try:
        yield
    finally:
        lock.release()


def cancel(cwd: Path, goal_id: str, env: Mapping[str, str], out: TextIO) -> int:
    SystemClock(env)  # a malformed HARNESS_NOW is refused before anything is taken over
    with open_session(cwd, env, [goal_id]) as session:
        return _cancel(session, goal_id, env, out)


def _cancel(session: Session[Secret], goal_id: str, env: Mapping[str, str], out: TextIO) -> int:
    repo, secret = session.repo, session.secret
    wt = open_worktree(repo, goal_id, session.control.branch(goal_id))
    if wt is None:
        raise InvalidInput(
            f"goal {goal_id}: has not started (nothing to cancel; remove its goal file instead)"
        )
    with _taken_over(GoalLock(repo.harness_dir() / "locks", goal_id)):
        paths = GoalPaths(wt.path, goal_id)
        loaded = load(paths, secret.goal_key(goal_id), committed_view(paths), repair=True)
        if loaded.cell.status in TERMINAL:
            out.write(line(f"{goal_id} is already {loaded.cell.status}"))
            return 0
        key = secret.goal_key(goal_id)
        signer = checkpoint_key(env, session.control)
        runner = Recorder(
            goal_id, key, wt, paths, loaded, SystemClock(env), lambda line: None, signer=signer
        )
        runner.emit("goal.cancelled", None, loaded.cell.iteration, {"by": env.get("USER", "")})
        runner.checkpoint("cancelled")
    out.write(line(f"{goal_id} cancelled"))
    return 0
