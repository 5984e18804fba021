"""Named points at durable boundaries where a test can kill the process (SIGKILL).

Armed with `HARNESS_FAILPOINT=<name>` (optionally `<name>@<n>` for the n-th hit). Unarmed,
`hit` is one dictionary lookup of a constant read at import. `HARNESS_FAILPOINT_TRACE=<file>`
appends each hit's name to the file, so a test can count a path's hits and kill at the last.
`HARNESS_FAILPOINT_STOP=1` stops the process (SIGSTOP) at every hit, after tracing it, until
a test that has copied the files continues it (SIGCONT): the power-cut test's snapshots.
"""

from __future__ import annotations

import os
import signal

_ARMED = os.environ.get("HARNESS_FAILPOINT", "")
_NAME, _, _NTH = _ARMED.partition("@")
_TRACE = os.environ.get("HARNESS_FAILPOINT_TRACE", "")
_STOP = os.environ.get("HARNESS_FAILPOINT_STOP", "") == "1"
_counts: dict[str, int] = {}


def hit(name: str) -> None:
    if _TRACE:
        with open(_TRACE, "a", encoding="utf-8") as trace:
            trace.write(name + "\n")
    if _STOP:
        os.kill(os.getpid(), signal.SIGSTOP)
    if not _ARMED or name != _NAME:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] >= int(_NTH or "1"):
        os.kill(os.getpid(), signal.SIGKILL)
