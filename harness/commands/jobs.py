"""`harness run --jobs N`: up to N goals at once, through N reused worker processes.

Each worker is `harness run --serve-fd FD` (`run.serve`): it takes goal ids one at a time
from a socket, advances each exactly as `harness run <id> [options]` would (its own session, lock, lines
and exit code) and answers with the goal's exit code. A worker serves goal after goal, so
Python's start and the imports are paid once per worker instead of once per goal (most of
a small goal's CPU; performance.md, "Scale"). A worker that dies (a crash, a signal) costs
only the goal it was advancing: that goal gets the worker's exit code, and a new worker
takes the goals still to run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TextIO

from harness.record.visible import block, line
from harness.trust.secret import ENV_SECRET, ENV_SECRET_FD

# A worker's exit codes for SIGINT and SIGTERM (errors.Interrupted): the run is being
# stopped, and this thread may see it before the main thread runs its signal handler.
STOPPED = (130, 143)


def run_parallel(
    root: Path,
    ids: list[str],
    options: list[str],
    jobs: int,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO,
) -> list[int]:
    """Advance up to `jobs` goals at once; each goal's exit code, in the order of `ids`.

    Separate processes keep every goal's lock, signals and failure apart from the goals
    advancing beside it; their lines are passed on whole, as they come.
    """
    guard = threading.Lock()
    todo = iter(enumerate(ids))
    codes = [0] * len(ids)

    def forward(stream: IO[str], sink: TextIO) -> None:
        for text in stream:  # made safe where it was made; `block` again costs nothing
            with guard:
                sink.write(block(text))
                sink.flush()

    def take() -> tuple[int, str] | None:
        with guard:
            return None if stopping.is_set() else next(todo, None)

    def slot() -> None:
        worker: _Worker | None = None
        try:
            while (item := take()) is not None:
                index, goal_id = item
                worker = worker or _Worker(root, options, env, forward, out, err)
                code = worker.advance(goal_id)
                if code is None:  # the worker died on this goal: its exit code is the goal's
                    pid, ended = worker.pid, worker.close()
                    worker = None
                    codes[index], said = died(goal_id, pid, ended)
                    if said is not None:
                        with guard:
                            err.write(line(said))
                            err.flush()
                    if codes[index] in STOPPED:  # ^C reached it: before it reaches us, maybe
                        stopping.set()
                else:
                    codes[index] = code
        finally:
            if worker is not None:
                worker.close()

    stopping = threading.Event()
    with ThreadPoolExecutor(max_workers=min(jobs, len(ids))) as pool:
        try:
            for done in [pool.submit(slot) for _ in range(min(jobs, len(ids)))]:
                done.result()
        except BaseException:  # ^C: the workers got it too; no new one starts
            stopping.set()
            raise
    return codes


def died(goal_id: str, pid: int, ended: int) -> tuple[int, str | None]:
    """The goal's exit code when its worker ended without answering, and the line that
    says why when nothing else would: a worker killed by a signal (the OOM killer's
    SIGKILL, a `kill`) prints nothing itself, and its negative status is no exit code
    (as 247 it read as a silent failure; cli.md, "run --jobs"). Killed by SIGINT or
    SIGTERM it stands for the stop, as a shell reports it (130, 143); by any other, 1."""
    if ended >= 0:
        return ended, None  # it exited: its own line said why
    try:
        killer = signal.Signals(-ended)
    except ValueError:
        name, code = f"signal {-ended}", 1
    else:
        name, code = killer.name, {signal.SIGINT: 130, signal.SIGTERM: 143}.get(killer, 1)
    return code, (
        f"harness: {goal_id}: error: the `run --jobs` worker advancing it (pid {pid}) was "
        f"killed by {name}; the goal is as the kill left it and the next run resumes it"
    )


class _Worker:
    """One `harness run --serve-fd` child, its output forwarded line by line."""

    def __init__(
        self,
        root: Path,
        options: list[str],
        env: Mapping[str, str],
        forward: Callable[[IO[str], TextIO], None],
        out: TextIO,
        err: TextIO,
    ) -> None:
        ours, theirs = socket.socketpair()
        argv = [sys.executable, "-m", "harness", "run", "--serve-fd", str(theirs.fileno())]
        # A secret from HARNESS_SECRET goes through a pipe, never the child's environment
        # (whose start-up block /proc/<pid>/environ shows until the child blanks it).
        secret = env.get(ENV_SECRET, "").encode("utf-8")
        child = {k: v for k, v in env.items() if k != ENV_SECRET}
        reader, writer = os.pipe() if secret else (-1, -1)
        if secret:
            child[ENV_SECRET_FD] = str(reader)
        passed = (theirs.fileno(), reader) if secret else (theirs.fileno(),)
        try:
            self._proc = subprocess.Popen(
                [*argv, *options],
                cwd=root,
                env=child,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                pass_fds=passed,
            )
        except BaseException:
            ours.close()
            if secret:
                os.close(writer)
            raise
        finally:
            theirs.close()
            if secret:
                os.close(reader)
        if secret:
            with contextlib.suppress(OSError), open(writer, "wb") as pipe:
                pipe.write(secret)
        self._sock = ours
        self._answers = ours.makefile("rb")
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._threads = [
            threading.Thread(target=forward, args=(self._proc.stdout, out)),
            threading.Thread(target=forward, args=(self._proc.stderr, err)),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def advance(self, goal_id: str) -> int | None:
        """The goal's exit code, or None when the worker ended before answering."""
        try:
            self._sock.sendall(goal_id.encode("utf-8") + b"\n")
            answer = self._answers.readline()
        except OSError:
            return None
        try:
            return int(answer)
        except ValueError:
            return None

    def close(self) -> int:
        """End the worker (end of input: it stops after its goal) and its exit code."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        code = self._proc.wait()
        for thread in self._threads:
            thread.join()
        self._answers.close()
        self._sock.close()
        return code
