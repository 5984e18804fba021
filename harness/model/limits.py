"""Limits a goal runs under: durations, the budget and the halting rules, and their defaults.

Shared by goal files and the config (which gives the defaults), so that neither of those
two modules needs the other's import.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from harness.errors import invalid
from harness.model.network import Network
from harness.model.wording import got, show_value

# What a step's denied connection does (sandbox.md, "Egress by name"): nothing more than
# its record, or the goal parks at the gate egress_denied for a human.
OnDeniedEgress = Literal["continue", "park"]

# A longer timeout overflows the OS wait calls subprocess makes; a year is ample.
MAX_DURATION_SECONDS = 365 * 24 * 3600
_MAX_DURATION_TEXT = f"{MAX_DURATION_SECONDS // 3600}h"
DURATION_EXPECTED = (
    f"a duration like 90s, 30m or 4h, or a whole number of seconds, up to {_MAX_DURATION_TEXT}"
)
COST_EXPECTED = "a number of US dollars greater than 0 and at most 1000000000"
_DURATION_RE = re.compile(r"([0-9]{1,9})([smh])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


@dataclass(frozen=True)
class Budget:
    """Limits on one goal's whole life; a zero, negative or NaN limit is refused (G2)."""

    max_iterations: int
    max_seconds: int
    max_cost_usd: float
    max_turns: int

    def __post_init__(self) -> None:
        for name in ("max_iterations", "max_seconds", "max_turns"):
            _require_positive_int(name, getattr(self, name))
        _require_positive_number("max_cost_usd", self.max_cost_usd)

    def as_dict(self) -> dict[str, int | float]:
        """The limits under the names the state cell and `status --json` use."""
        return {
            "iterations": self.max_iterations,
            "seconds": self.max_seconds,
            "cost_usd": self.max_cost_usd,
            "turns": self.max_turns,
        }


DEFAULT_UNAVAILABLE_TRIES = 3
DEFAULT_UNAVAILABLE_BACKOFF_S = 300
# A goal nothing has advanced for this long (not finished, not waiting for a human) is
# `stale` in `status`: a dead cron line or a broken CI schedule (docs/specs/cli.md).
DEFAULT_STALE_AFTER_S = 24 * 3600


@dataclass(frozen=True)
class Halt:
    no_progress_passes: int
    max_passes: int
    # A build whose model API failed is tried again on a later run, after the backoff
    # (doubling each time); after this many failed tries in a row the goal stops.
    unavailable_tries: int = DEFAULT_UNAVAILABLE_TRIES
    unavailable_backoff_s: int = DEFAULT_UNAVAILABLE_BACKOFF_S
    stale_after_s: int = DEFAULT_STALE_AFTER_S
    on_denied_egress: OnDeniedEgress = "continue"

    def __post_init__(self) -> None:
        for name in (
            "no_progress_passes",
            "max_passes",
            "unavailable_tries",
            "unavailable_backoff_s",
            "stale_after_s",
        ):
            _require_positive_int(name, getattr(self, name))

    def backoff_s(self, tries: int) -> int:
        """How long to wait after the `tries`-th failed try in a row (1, 2, …)."""
        return min(self.unavailable_backoff_s << min(max(tries - 1, 0), 32), MAX_DURATION_SECONDS)


def _require_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a whole number greater than 0, not {value!r}")


def _require_positive_number(name: str, value: object) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        ok = False
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    if not ok:
        raise ValueError(f"{name} must be a finite number greater than 0, not {value!r}")


@dataclass(frozen=True)
class Defaults:
    """Bounds a goal file may leave out."""

    budget: Budget
    halt: Halt
    timeouts: Mapping[str, int]  # seconds per step: build judge review plan ship
    # A step's network when its goal file names none (`defaults.network.<step>`).
    network: Mapping[str, Network] = field(default_factory=lambda: MappingProxyType({}))


def parse_duration(value: object, source: str, key: str) -> int:
    """Seconds from `90s`, `30m`, `4h` or a whole number of seconds; always > 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        seconds, shown = value, show_value(value)
    elif isinstance(value, str) and (match := _DURATION_RE.fullmatch(value)):
        seconds, shown = int(match[1]) * _UNIT_SECONDS[match[2]], show_value(value)
    elif isinstance(value, str):
        raise invalid(source, key, f"{show_value(value)} is not a duration", DURATION_EXPECTED)
    else:
        raise invalid(source, key, got(value), DURATION_EXPECTED)
    if seconds <= 0:
        raise invalid(source, key, f"{shown} is not greater than 0", DURATION_EXPECTED)
    if seconds > MAX_DURATION_SECONDS:
        raise invalid(
            source, key, f"{shown} is longer than {_MAX_DURATION_TEXT}", DURATION_EXPECTED
        )
    return seconds


def show_duration(seconds: float) -> str:
    """Whole seconds as a goal file writes them: `48h`, `90m`, `45s`, or `1h30m` / `2m5s`
    where one unit is not exact (`halt.stale_after 48h`, not `172800s`); a fraction of a
    second stays as seconds (`0.5s`)."""
    if seconds != int(seconds) or seconds <= 0:
        return f"{seconds:g}s"
    whole = int(seconds)
    for unit in ("h", "m"):
        if whole % _UNIT_SECONDS[unit] == 0:
            return f"{whole // _UNIT_SECONDS[unit]}{unit}"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{n}{u}" for n, u in parts if n)


def budget_from(raw: Mapping[str, Any], default: Budget, source: str, key: str) -> Budget:
    """A Budget from a schema-checked mapping, each missing limit taken from `default`."""
    seconds = default.max_seconds
    if "max_seconds" in raw:
        seconds = parse_duration(raw["max_seconds"], source, f"{key}.max_seconds")
    return Budget(
        max_iterations=raw.get("max_iterations", default.max_iterations),
        max_seconds=seconds,
        max_cost_usd=_cost(raw.get("max_cost_usd", default.max_cost_usd), source, key),
        max_turns=raw.get("max_turns", default.max_turns),
    )


def _cost(value: int | float, source: str, key: str) -> float:
    # JSON Schema's bounds let NaN through: every comparison with NaN is false.
    if not math.isfinite(value):
        problem = f"{show_value(value)} is not a finite number"
        raise invalid(source, f"{key}.max_cost_usd", problem, COST_EXPECTED)
    return float(value)


def halt_from(raw: Mapping[str, Any], default: Halt, source: str, key: str) -> Halt:
    """A Halt from a schema-checked mapping, each missing value taken from `default`."""
    backoff = default.unavailable_backoff_s
    if "unavailable_backoff" in raw:
        backoff = parse_duration(raw["unavailable_backoff"], source, f"{key}.unavailable_backoff")
    stale_after = default.stale_after_s
    if "stale_after" in raw:
        stale_after = parse_duration(raw["stale_after"], source, f"{key}.stale_after")
    return Halt(
        no_progress_passes=raw.get("no_progress_passes", default.no_progress_passes),
        max_passes=raw.get("max_passes", default.max_passes),
        unavailable_tries=raw.get("unavailable_tries", default.unavailable_tries),
        unavailable_backoff_s=backoff,
        stale_after_s=stale_after,
        on_denied_egress=raw.get("on_denied_egress", default.on_denied_egress),
    )
