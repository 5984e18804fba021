"""Running a step's command: the one place, besides git, that starts child processes.

How output is captured: the child's stdout and stderr are two pipes that the parent
reads with a selector as data arrives. Every chunk goes into two bounded tail buffers:
one for stdout alone (`stdout_tail`, the last `stdout_keep_bytes`) and one for both
streams in the order the parent read them (`output_tail`, the last `tail_bytes`, small
enough for a ledger event). Every stdout chunk also goes, as read, to the caller's
`on_stdout` sink when there is one (an agent's output is parsed there as a stream, so
nothing depends on what a tail kept). Memory stays
bounded whatever the child writes, nothing touches the disk, and because both pipes are
always drained the child can never block on a full pipe. Writes to the two streams within
the same instant may be read in either order; anything else keeps its written order.

The child starts in its own session (so its process group id is its pid) and the prompt
reaches it through a temp file as stdin, so a child that never reads stdin cannot stall us.

When the step is over (the child exited, or its timeout passed) the whole group gets
SIGTERM, a grace period to exit, then SIGKILL: a step leaves no background process behind
that could change the worktree after its result is recorded. The child is reaped only
after that, so its pid (and group id) cannot be reused by an unrelated process meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from harness.loop.contain.gate import Gate
from harness.store.gitenv import GIT_LOCATING

ALWAYS_SCRUBBED = (
    "HARNESS_SECRET",
    "HARNESS_SECRET_FILE",
    "HARNESS_KEY_PASSPHRASE",
    "HARNESS_RUNNER_KEY_FILE",  # the runner's signing key (trust/runnerkey.py)
    "HARNESS_PUSH_TOKEN",  # the CI job token, for the harness's own git only (ci_matrix.py)
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
)
# The runner's own OpenTelemetry exporter (loop/otel.py): where its collector is and the
# credentials it sends there (`OTEL_EXPORTER_OTLP_HEADERS`, client keys) are not a step's.
SCRUBBED_PREFIXES = ("OTEL_EXPORTER_OTLP_",)
# A child that inherits these would read or write another repository than its cwd's.
GIT_LOCATION_VARS = GIT_LOCATING
GRACE_S = 2.0
HAVE_WAITID = hasattr(os, "waitid")
_CHUNK = 65_536
_POLL_S = 0.05

Clock = Callable[[], float]


@dataclass(frozen=True)
class StepResult:
    exit_code: int | None  # None when killed by timeout or signal
    duration_s: float
    stdout_tail: str  # last stdout_keep_bytes of stdout, marked when cut
    output_tail: str  # last tail_bytes of stdout and stderr as read, marked when cut
    timed_out: bool
    stdout_truncated: bool
    signal: str | None = None  # the signal that ended it (`SIGKILL`: the OOM killer, say)


def scrubbed(name: str) -> bool:
    """Whether a variable never reaches a child, whatever the configuration says."""
    return name in ALWAYS_SCRUBBED or name.startswith(SCRUBBED_PREFIXES)


def child_env(
    base: Mapping[str, str], scrub: Iterable[str], extra: Mapping[str, str]
) -> dict[str, str]:
    """`base` minus every secret-bearing and repo-locating name, plus `extra`."""
    removed = {*GIT_LOCATION_VARS, *scrub}
    env = {
        name: value for name, value in base.items() if name not in removed and not scrubbed(name)
    }
    env.update(extra)
    return env


def kill_group(pid: int) -> None:
    """SIGKILL every process in the group `pid` leads; a group already gone is fine."""
    signal_group(pid, signal.SIGKILL)


def signal_group(pid: int, sig: signal.Signals) -> None:
    # PermissionError: a member changed its uid (setuid binary); nothing more we can do.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class _Tail:
    """The last `limit` bytes of a stream, in memory bounded by about twice that."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.total = 0
        self._buf = bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk
        # Trim only once the slack reaches `limit`, so the copying stays amortised O(1).
        if len(self._buf) > 2 * self.limit + _CHUNK:
            del self._buf[: len(self._buf) - self.limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        kept = bytes(self._buf[max(0, len(self._buf) - self.limit) :])
        if not self.truncated:
            return kept.decode("utf-8", errors="replace")
        # A cut inside a UTF-8 sequence would start with stray continuation bytes.
        start = 0
        while start < min(3, len(kept)) and 0x80 <= kept[start] <= 0xBF:
            start += 1
        kept = kept[start:]
        marker = f"[… {self.total - len(kept)} bytes truncated]\n"
        return marker + kept.decode("utf-8", errors="replace")


def _pidfd(pid: int) -> int | None:
    """A file descriptor readable once `pid` exits (Linux 5.3 and later), else None."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # an older kernel, or a sandbox that forbids the call
        return None


class _Child:
    """One running child: its pipes, its tails, and exit detection without reaping."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        clock: Clock,
        out: _Tail,
        both: _Tail,
        sink: Callable[[bytes], None] | None = None,
    ) -> None:
        self.proc = proc
        self.clock = clock
        self.out = out
        self.both = both
        self.sink = sink
        self.selector = selectors.DefaultSelector()
        for stream, is_stdout in ((proc.stdout, True), (proc.stderr, False)):
            assert stream is not None
            self.selector.register(stream, selectors.EVENT_READ, is_stdout)
        # Where the system has one, a pidfd wakes the wait the moment the child exits
        # (a pipe's end of file comes a moment before its exit; a sleep of _POLL_S each
        # step was a twelfth of a small step's time in a big repository).
        self.pidfd = _pidfd(proc.pid)
        if self.pidfd is not None:
            self.selector.register(self.pidfd, selectors.EVENT_READ, None)

    def exited(self) -> bool:
        if not HAVE_WAITID:
            # CPython before 3.13 has no os.waitid on macOS (cpython#113536): reap now.
            # killpg then reaches the leftovers still; a reused pid would also have to
            # lead a process group of its own to be hit.
            return self.proc.poll() is not None
        try:
            # WNOWAIT leaves the zombie in place: the pid stays ours until `reap`.
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped behind our back (SIGCHLD set to SIG_IGN)
            return True
        return info is not None

    def pipes_open(self) -> bool:
        return any(key.data is not None for key in self.selector.get_map().values())

    def read_for(self, seconds: float) -> None:
        """Read whatever arrives within `seconds`, or until the child exits; sleep that long
        if neither a pipe nor the pidfd is open."""
        if not self.selector.get_map():
            time.sleep(seconds)
            return
        for key, _ in self.selector.select(seconds):
            if key.data is None:  # the pidfd: the child has exited (it stays readable)
                self._close_pidfd()
                continue
            stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
            chunk = os.read(stream.fileno(), _CHUNK)
            if not chunk:
                self.selector.unregister(stream)
                continue
            if key.data:
                self.out.add(chunk)
                if self.sink is not None:
                    self.sink(chunk)
            self.both.add(chunk)

    def run_until(self, deadline: float, *, need_eof: bool) -> bool:
        """Read until the child exited (and, if `need_eof`, its pipes closed) or `deadline`."""
        while not (self.exited() and (not need_eof or not self.pipes_open())):
            remaining = deadline - self.clock()
            if remaining <= 0:
                return False
            self.read_for(min(remaining, _POLL_S))
        return True

    def finish_group(self, grace_s: float) -> None:
        """SIGTERM the group, let it exit and flush within `grace_s`, then SIGKILL it."""
        signal_group(self.proc.pid, signal.SIGTERM)
        self.run_until(self.clock() + grace_s, need_eof=True)
        kill_group(self.proc.pid)
        # After SIGKILL the pipes close at once unless a process escaped the group
        # (setsid); that one must not hold the step open.
        self.run_until(self.clock() + min(grace_s, 0.5), need_eof=True)

    def reap(self) -> int:
        return self.proc.wait()

    def _close_pidfd(self) -> None:
        if self.pidfd is not None:
            self.selector.unregister(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None

    def close(self) -> None:
        self._close_pidfd()
        self.selector.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def run_step(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes,
    timeout_s: float,
    tail_bytes: int = 16_384,
    stdout_keep_bytes: int = 1_048_576,
    clock: Callable[[], float] = time.monotonic,
    on_start: Callable[[int], None] | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
    bwrap: bool = False,
    prepare: Prepare | None = None,
) -> StepResult:
    """Run `argv` in `cwd` with a timeout and bounded capture; see the module docstring.

    A command that cannot start returns exit code 127 (not found) or 126 (not runnable)
    with the reason in `output_tail`, as a shell would, instead of raising. `bwrap`: `argv`
    is the step's command under bwrap (sandbox.md), whose exit 128+N is read as its
    command's death by signal N, and whose failure to start the command as 127 or 126
    (`_bwrap_code`). `prepare` runs in the child before exec (a read-only step's overlay
    mount, contain/layer.py); when it fails the step does not start and returns exit 126
    with its `failure`.
    """
    if not argv:
        raise ValueError("run_step: empty argv")
    started = clock()
    out, both = _Tail(stdout_keep_bytes), _Tail(tail_bytes)
    # A contained step starts without a fork of the harness, held at a gate until bwrap
    # will die with it (contain/gate.py); a read-only step's overlay (`prepare`) needs one.
    gate = Gate() if bwrap and prepare is None else None
    try:
        proc = _start(argv, cwd, env, stdin, prepare, gate)
    except OSError as exc:
        if gate is not None:
            gate.close()
        return _not_started(argv, cwd, exc, clock() - started)
    except subprocess.SubprocessError:  # `prepare` raised in the child (nothing ran)
        assert prepare is not None
        return cannot_start(prepare.failure)
    if gate is not None:
        gate.started()
    child = _Child(proc, clock, out, both, on_stdout)
    try:
        if on_start is not None:
            on_start(proc.pid)  # recorded before the command may run: a killed run ends it
        if gate is not None:
            gate.open(started + timeout_s, clock)
        timed_out = not child.run_until(started + timeout_s, need_eof=False)
        child.finish_group(GRACE_S)
        code = child.reap()
        code = _bwrap_code(code, both.text()) if bwrap else code
    except BaseException:
        # KeyboardInterrupt, SystemExit or a bug: never leave the step's processes behind.
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        child.close()
        if gate is not None:
            gate.close()
    return StepResult(
        exit_code=None if timed_out or code < 0 else code,
        duration_s=clock() - started,
        stdout_tail=out.text(),
        output_tail=both.text(),
        timed_out=timed_out,
        stdout_truncated=out.truncated,
        signal=_signal_name(code) if code < 0 and not timed_out else None,
    )


def _bwrap_code(code: int, output: str) -> int:
    """bwrap's exit code as a bare command's would be: bwrap reports its command's death by
    signal N as its own exit 128+N, and bubblewrap 0.8.0 says no more (its --json-status-fd
    gives `"exit-code": 137` both for a command killed by SIGKILL and for `exit 137`), so
    128+N reads as -N, killed by signal N, as a shell reads it. A command that itself exits
    128+N reads the same; bwrap's own failures exit 1, and one of them is its command not
    starting (`bwrap: execvp <name>: <strerror>`, the whole output: nothing else ran), read
    as 127 when the name was not found and 126 for any other reason, as bare."""
    if code == 1 and (match := _BWRAP_EXECVP.fullmatch(output)):
        return 127 if match["why"] == os.strerror(errno.ENOENT) else 126
    return 128 - code if 128 < code < 128 + signal.NSIG else code


# bwrap's message when execvp fails (bubblewrap's `die_with_error ("execvp %s", …)`).
_BWRAP_EXECVP = re.compile(r"bwrap: execvp [^\n]*: (?P<why>[^\n:]+)\n?")


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL it if the harness dies (Linux prctl).

    A harness killed with SIGKILL cannot end its step; without this the agent would keep
    editing the worktree while the next run resumes. Grandchildren are ended on resume
    from the group id the harness recorded (controller.ChildRecord).
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _then(prepare: Prepare) -> Callable[[], None]:
    def before_exec() -> None:
        _die_with_parent()
        prepare()

    return before_exec


def _load_prctl() -> Callable[[int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    prctl: Callable[[int, int], int] = libc.prctl
    return prctl


_PR_SET_PDEATHSIG = 1
_PRCTL = _load_prctl()


class Prepare(Protocol):
    """Work the step's own process does before exec; raises when it cannot."""

    @property
    def failure(self) -> str:
        """The step's output when it raised."""
        ...

    def __call__(self) -> None: ...


def _start(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes,
    prepare: Prepare | None = None,
    gate: Gate | None = None,
) -> subprocess.Popen[bytes]:
    # Scrub again here, whatever the caller built: the secret never reaches a child.
    safe_env = {name: value for name, value in env.items() if not scrubbed(name)}
    with tempfile.TemporaryFile() as stdin_file:
        stdin_file.write(stdin)
        stdin_file.seek(0)
        # A gated build has no preexec_fn, so Python starts bwrap by vfork (contain/gate.py).
        before_exec = _die_with_parent if prepare is None else _then(prepare)
        return subprocess.Popen(
            list(argv) if gate is None else gate.argv(argv),
            cwd=cwd,
            env=safe_env,
            stdin=stdin_file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=before_exec if gate is None else None,
            close_fds=True,
            pass_fds=() if gate is None else gate.child_fds(),
        )


def cannot_start(message: str) -> StepResult:
    """The result of a step the harness could not start for `message` (exit 126)."""
    return StepResult(126, 0.0, "", message.rstrip("\n") + "\n", False, False)


def _not_started(argv: Sequence[str], cwd: Path, exc: OSError, duration_s: float) -> StepResult:
    code = 127 if isinstance(exc, FileNotFoundError) else 126
    reason = exc.strerror or str(exc)
    if exc.filename is not None and os.fspath(exc.filename) == os.fspath(cwd):
        message = f"harness: cannot run {argv[0]!r} in {os.fspath(cwd)!r}: {reason}\n"
    else:
        message = f"harness: cannot run {argv[0]!r}: {reason}\n"
    return StepResult(
        exit_code=code,
        duration_s=duration_s,
        stdout_tail="",
        output_tail=message,
        timed_out=False,
        stdout_truncated=False,
    )


def end_marked_group(pgid: int, marker: str) -> int:
    """SIGKILL every process of group `pgid` whose environment holds `marker` (Linux /proc).

    The group id was recorded by an earlier harness process that died; the marker check
    keeps a reused id from ever hitting an unrelated process. Returns how many were ended.
    """
    wanted = marker.encode() + b"\0"
    ended = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_bytes()
            pgrp = int(stat.rsplit(b")", 1)[1].split()[2])
            if pgrp != pgid or wanted not in (proc / "environ").read_bytes() + b"\0":
                continue
            os.kill(int(proc.name), signal.SIGKILL)
            ended += 1
        except (OSError, ValueError, IndexError):
            continue
    return ended
