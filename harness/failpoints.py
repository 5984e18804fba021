"""Named points at durable boundaries where a test can kill the process (SIGKILL), and
fault points where a test can make a system call fail.

Armed with `HARNESS_FAILPOINT=<name>` (optionally `<name>@<n>` for the n-th hit). Unarmed,
`hit` is one dictionary lookup of a constant read at import. `HARNESS_FAILPOINT_TRACE=<file>`
appends each hit's name to the file, so a test can count a path's hits and kill at the last.
`HARNESS_FAILPOINT_STOP=1` stops the process (SIGSTOP) at every hit, after tracing it, until
a test that has copied the files continues it (SIGCONT): the power-cut test's snapshots.

A fault point (`fault`) is armed with `<name>:<ERRNO>` (`append_fsync:EIO`, optionally
`@<n>`): its n-th pass (the first by default) raises that OSError where the system call it stands before would,
so the error path is the real one. Fault points are neither traced nor stopped at: they
are not durable boundaries.
"""

from __future__ import annotations

import errno
import os
import signal

_ARMED = os.environ.get("HARNESS_FAILPOINT", "")
_SPEC, _, _NTH = _ARMED.partition("@")
_NAME, _, _ERRNO = _SPEC.partition(":")
_TRACE = os.environ.get("HARNESS_FAILPOINT_TRACE", "")
_STOP = os.environ.get("HARNESS_FAILPOINT_STOP", "") == "1"
_counts: dict[str, int] = {}


def hit(name: str) -> None:
    if _TRACE:
        with open(_TRACE, "a", encoding="utf-8") as trace:
            trace.write(name + "\n")
    if _STOP:
        os.kill(os.getpid(), signal.SIGSTOP)
    if not _ARMED or name != _NAME or _ERRNO:
        return
    if _count(name) >= int(_NTH or "1"):
        os.kill(os.getpid(), signal.SIGKILL)


def fault(name: str) -> None:
    """Raise the armed OSError at the n-th pass of fault point `name` (else nothing)."""
    if not _ERRNO or name != _NAME or _count(name) != int(_NTH or "1"):
        return
    code = getattr(errno, _ERRNO, None)
    if not isinstance(code, int):
        raise ValueError(f"HARNESS_FAILPOINT: {_ERRNO!r} is not an errno name (e.g. EIO)")
    raise OSError(code, os.strerror(code))


def _count(name: str) -> int:
    _counts[name] = _counts.get(name, 0) + 1
    return _counts[name]
