"""Starting a contained step without a fork of the harness, its command held until bwrap
will die with the harness (docs/specs/sandbox.md, "A step ends with the harness").

A step started with a `preexec_fn` (the death signal set in the child before exec) costs a
fork of the whole harness process: 1-2.5 ms a step as the process grows, a quarter to a
half of what containing a `true` adds (performance.md, "Thirteenth pass"). Without one,
Python starts the child by vfork, and the death signal is bwrap's own `--die-with-parent`,
set once bwrap runs; a harness killed before that moment would leave the step running
unwatched. The gate closes that moment:

- bwrap gets `--info-fd`, which its outer process writes only after its own
  `PR_SET_PDEATHSIG`, and `--block-fd`, which the sandboxed process reads once before it
  goes on to exec the command;
- the harness reads the info to its end and only then writes the one byte that lets the
  command run: by then a harness killed by SIGKILL takes bwrap with it;
- bwrap also holds the byte's write end, so a harness killed before it wrote the byte
  leaves a read that never ends, never end of file: the command never runs. The blocked
  processes are in the step's process group, which the harness recorded before it opened
  the gate, so the next run ends them (`guards.ChildRecord`).

Every contained step is started this way but a read-only step on an overlay: its overlay
is mounted by its own process between fork and exec (`layer.Mounter`), which needs the fork
anyway (a read-only step on a copy has nothing to do there and is gated too).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
from collections.abc import Callable, Sequence


class Gate:
    """The two pipes between the harness and one bwrap: the info it writes, the byte it waits for."""

    def __init__(self) -> None:
        self.info, self._info_w = map(_above_stdio, os.pipe2(os.O_CLOEXEC))
        self._go_r, self.go = map(_above_stdio, os.pipe2(os.O_CLOEXEC))

    def argv(self, argv: Sequence[str]) -> list[str]:
        """`argv` (bwrap's command line) with the gate's two options."""
        fds = ["--info-fd", str(self._info_w), "--block-fd", str(self._go_r)]
        return [argv[0], *fds, *argv[1:]]

    def child_fds(self) -> tuple[int, ...]:
        """What bwrap inherits: the info's write end, the byte's read end and its write end
        (held so that the read never sees end of file)."""
        return (self._info_w, self._go_r, self.go)

    def started(self) -> None:
        """After the start: the harness keeps only the info's read end and the byte's write end."""
        for fd in (self._info_w, self._go_r):
            os.close(fd)
        self._info_w = self._go_r = -1

    def open(self, deadline: float, clock: Callable[[], float]) -> None:
        """Wait for bwrap's info (its death signal set), then let the command run. Nothing is
        written when bwrap said nothing before `deadline` (the step times out) or ended
        before it made the sandbox (its exit code and message say why)."""
        said = False
        while True:
            remaining = deadline - clock()
            if remaining <= 0 or not select.select([self.info], [], [], remaining)[0]:
                return
            chunk = os.read(self.info, 4096)
            if not chunk:
                break
            said = True
        if said:
            with contextlib.suppress(BrokenPipeError):  # the sandbox ended in the meantime
                os.write(self.go, b"g")

    def close(self) -> None:
        for fd in (self.info, self._info_w, self._go_r, self.go):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.info = self._info_w = self._go_r = self.go = -1


def _above_stdio(fd: int) -> int:
    """`fd`, moved to 3 or above: a harness started with its standard streams closed gets
    pipes at 0-2, which the child's own stdin, stdout and stderr would take over."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved
