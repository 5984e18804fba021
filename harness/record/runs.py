"""The runs of a recurring goal for the reports: when each started, how it ended, its spend.

Kept from the events alone (as the reports are), bounded to the last MAX_RUNS runs. A
one-shot goal has no rows, so its reports are as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from harness.errors import InvalidInput
from harness.record.events import AGENT_STEPS
from harness.record.ledger import Event, Record

MAX_RUNS = 30


def checked_run(records: Iterable[Record], run: int) -> Iterator[Record]:
    """Every record (each read and checked), for a command that shows run `run` of them
    (`replay --run`, `trace --run`); a run the goal does not have is bad input."""
    seen = 0
    for record in records:
        seen = max(seen, record.event.run)
        yield record
    if seen < run:
        raise InvalidInput(f"--run: {run} (expected a run of the goal: 1 to {seen or 1})")


@dataclass
class RunRow:
    run: int
    started: str
    outcome: str = "running"
    cost_usd: float = 0.0
    seconds: float = 0.0
    turns: int = 0


class Runs:
    """Feed every event in order; `rows` are the last MAX_RUNS runs, `count` all of them."""

    def __init__(self) -> None:
        self.rows: deque[RunRow] = deque(maxlen=MAX_RUNS)
        self.count = 0

    def add(self, event: Event) -> None:
        kind, data = event.type, event.data
        if kind == "goal.started" and data.get("every_s") is not None:
            self._open(1, event.ts)
        elif kind == "run.started":
            self._open(int(data["run"]), event.ts)
        if not self.rows:
            return
        row = self.rows[-1]
        if kind == "step.finished":
            row.cost_usd += data.get("cost_usd", 0.0)
            row.turns += data.get("turns", 0)
            row.seconds += data["duration_s"] if event.step in AGENT_STEPS else 0.0
        elif kind in ("goal.completed", "goal.cancelled", "goal.failed"):
            reason = data.get("reason")
            row.outcome = kind.split(".")[1] + (f" ({reason})" if reason else "")
        elif kind == "goal.gated":
            row.outcome = f"{data['status']} ({data['reason']})"
        elif kind == "decision.used":
            row.outcome = "running"

    def _open(self, run: int, ts: str) -> None:
        self.rows.append(RunRow(run, ts))
        self.count += 1

    def markdown(self) -> str:
        if not self.rows:
            return ""
        lines = [
            f"| {r.run} | {r.started} | {r.outcome} | ${r.cost_usd:.2f} | {r.seconds:.1f} "
            f"| {r.turns} |\n"
            for r in self.rows
        ]
        shown = len(self.rows)
        note = "" if shown == self.count else f"The last {shown} of {self.count} runs.\n\n"
        return (
            f"## Runs\n\n{note}| run | started | outcome | cost | agent seconds | turns |\n"
            f"|---|---|---|---|---|---|\n{''.join(lines)}\n"
        )
