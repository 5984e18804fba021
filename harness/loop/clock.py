"""The loop's clock: the wall time events are stamped with, and a monotonic one for spans.

It is passed in (`RunContext.clock`) so that tests can run the loop on a fixed clock.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> str: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def monotonic(self) -> float:
        return time.monotonic()


def later(ts: str, seconds: int) -> str:
    """The ISO time `seconds` after `ts` (both in the clock's format)."""
    moment = datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
