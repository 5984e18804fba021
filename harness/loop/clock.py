"""The loop's clock: the wall time events are stamped with, and a monotonic one for spans.

It is passed in (`RunContext.clock`) so that tests can run the loop on a fixed clock. The
system clock can be set from outside for dry runs and end-to-end tests: `HARNESS_NOW=<ISO
time>` makes the process's wall clock read that time when it is first asked and run on at
real speed from there (docs/specs/cli.md, "The clock").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Protocol

from harness.errors import InvalidInput

NOW_VARIABLE = "HARNESS_NOW"
NOW_EXPECTED = "an ISO 8601 time with its zone, e.g. 2030-01-01T02:00:00Z"
# HARNESS_NOW's value → how far it sets the wall clock from the real one, fixed the first
# time this process reads the value: every clock made with it reads one running time.
_OFFSETS: dict[str, timedelta] = {}


class Clock(Protocol):
    def now(self) -> str: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The wall clock, or with `HARNESS_NOW` in `env` the process's set one (empty: unset)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        value = (env or {}).get(NOW_VARIABLE, "")
        self.offset = offset_for(value) if value else timedelta(0)

    def now(self) -> str:
        return stamp(datetime.now(UTC) + self.offset)

    def monotonic(self) -> float:
        return time.monotonic()


def offset_for(value: str) -> timedelta:
    """How far `HARNESS_NOW=value` sets the wall clock ahead (or back), fixed per process."""
    if value not in _OFFSETS:
        _OFFSETS[value] = _moment(value) - datetime.now(UTC)
    return _OFFSETS[value]


def _moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(
            f"{NOW_VARIABLE}: {value!r} is not an ISO 8601 time (expected {NOW_EXPECTED})"
        ) from None
    if moment.tzinfo is None:
        raise InvalidInput(f"{NOW_VARIABLE}: {value!r} names no zone (expected {NOW_EXPECTED})")
    return moment.astimezone(UTC)


def stamp(moment: datetime) -> str:
    """`moment` in the clock's format: UTC, milliseconds, `Z`."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def later(ts: str, seconds: int) -> str:
    """The ISO time `seconds` after `ts` (both in the clock's format)."""
    return stamp(datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(seconds=seconds))
