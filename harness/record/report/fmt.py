"""Formatting: budget amounts, durations, axis ticks, clock times and counted nouns."""

from __future__ import annotations

import re
from collections.abc import Callable


def money(value: float) -> str:
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400):,}d {int(seconds % 86400 // 3600):02d}h"


def count(value: float) -> str:
    return f"{round(value):,}"


FORMATS: dict[str, Callable[[float], str]] = {
    "iterations": count,
    "seconds": duration,
    "cost_usd": money,
    "turns": count,
    "passes": count,
}


# Axis ticks want round money, not the table's four decimals for small amounts.
def _compact(value: float, decimals: int = 0) -> str:
    """A tick label short enough for the axis margin, however large the limit."""
    if value >= 1e6:
        return f"{value / 1e6:,.1f}M"
    if value >= 1e4:
        return f"{value / 1e3:,.0f}k"
    return f"{value:,.{decimals}f}"


TICKS: dict[str, Callable[[float], str]] = {
    "cost_usd": lambda v: "$" + _compact(v, 2),
    "seconds": lambda v: duration(v).replace(" 00h", "").replace(" 00m", ""),
    "iterations": _compact,
    "turns": _compact,
}


def clock(ts: str) -> str:
    """The time of day of an ISO timestamp; other stamps are shown whole."""
    found = re.fullmatch(r"\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)(\.\d+)?Z?", ts)
    return found.group(1) if found else ts


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} " + (word if n == 1 else many or word + "s")
