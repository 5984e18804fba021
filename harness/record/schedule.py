"""A recurring goal's schedule (`every`): anchored times, not the last run's start plus
`every` (docs/specs/loop.md, "When a run is due").

The first run is due at its start; each later one an interval after the one before it was
due, however late that one started. A run may start a little early, so a scheduler whose
tick arrives a few seconds before the anchor (cron at 02:00, the first run stamped 02:00:03)
still makes that tick's run. A runner that was away for several intervals makes one run: it
stands for the last anchored time it reached, and the next is due an interval after that.

Times are the clock's strings (`2030-01-01T02:00:00.000Z`); this module reads no cell, so
the cell's own methods can use it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# How early a run may start: a tenth of the interval, at most thirty seconds. More than the
# seconds a cron or systemd tick and the harness's start take, and less than the shortest
# scheduler period (cron's minute), so a run never moves to the tick before its own.
EARLY_SHARE = 10
EARLY_MAX_S = 30


def next_due(anchor: str | None, every_s: int | None) -> str | None:
    """When the next run is due: an interval after `anchor` (the time the run was due)."""
    if every_s is None or anchor is None:
        return None
    return stamp(moment(anchor) + timedelta(seconds=every_s))


def early(every_s: int) -> timedelta:
    """How long before its time a run may start."""
    return timedelta(seconds=min(every_s / EARLY_SHARE, EARLY_MAX_S))


def reached(due: str, every_s: int, now: str) -> bool:
    """Whether a run due at `due` may start at `now`."""
    return moment(now) + early(every_s) >= moment(due)


def slot(due: str, every_s: int, now: str) -> str:
    """The anchored time a run starting at `now` stands for: the last of `due`, `due` +
    every, … that `now` has reached (`due` itself when it has not: the caller checks)."""
    every = timedelta(seconds=every_s)
    periods = (moment(now) + early(every_s) - moment(due)) // every
    return stamp(moment(due) + max(0, periods) * every)


def moment(ts: str) -> datetime:
    """A time in the clock's format (ValueError when `ts` is none)."""
    parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"{ts!r} has no zone")
    return parsed


def is_time_or_none(value: object) -> bool:
    """Whether a cell's field holds a time in the clock's format, or nothing."""
    if value is None:
        return True
    try:
        return isinstance(value, str) and moment(value) is not None
    except ValueError:
        return False


def stamp(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
