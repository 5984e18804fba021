"""Staleness: a goal nothing has advanced for longer than its `halt.stale_after` (cli.md).

One rule for `status` (which shows it and exits 12 for it under `--check`) and for the
stale notification that `run` and `status --check` send once per stale spell (notify.md).
"""

from __future__ import annotations

from datetime import datetime

from harness.model.limits import DEFAULT_STALE_AFTER_S
from harness.record.cell import Cell
from harness.record.events import TERMINAL, WAITING


def stale_after(cell: Cell) -> int:
    """The goal's halt.stale_after in seconds (the default for a cell recorded before)."""
    return cell.stale_after_s if cell.stale_after_s is not None else DEFAULT_STALE_AFTER_S


def is_stale(cell: Cell, now: str) -> bool:
    """Not finished (a recurring goal between runs is not finished), not waiting for a
    human, and nothing advanced it (no event) for longer than halt.stale_after: the runner that should move it has stopped. (A goal
    waiting for approval or blocked by changed owners waits for a human too: the callers,
    who know that, leave it out.)"""
    if cell.status in WAITING or cell.advanced_at is None:
        return False
    if cell.status in TERMINAL and cell.every_s is None:
        return False  # a recurring goal between runs is stale when its runs stop coming
    try:
        since = datetime.fromisoformat(cell.advanced_at.replace("Z", "+00:00"))
        current = datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        return False  # not a time this harness wrote: nothing to measure from
    return (current - since).total_seconds() > stale_after(cell)
