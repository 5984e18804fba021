"""Named points at durable boundaries where a test can kill the process (SIGKILL).

Armed with `HARNESS_FAILPOINT=<name>` (optionally `<name>@<n>` for the n-th hit). Unarmed,
`hit` is one dictionary lookup of a constant read at import.
"""

from __future__ import annotations

import os
import signal

_ARMED = os.environ.get("HARNESS_FAILPOINT", "")
_NAME, _, _NTH = _ARMED.partition("@")
_counts: dict[str, int] = {}


def hit(name: str) -> None:
    if not _ARMED or name != _NAME:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] >= int(_NTH or "1"):
        os.kill(os.getpid(), signal.SIGKILL)
