"""Which commits bound a goal's code change, read from its ledger: where the goal branch
started (the base), the commit a decision would bind (the gate commit), and for each build
the commit before it and the commit holding its change (docs/specs/cli.md, `harness diff`).

A build's change is committed by its `step.finished` checkpoint, and the next step's
`step.started` names that commit as its `base`; a build still last on the branch ends at the
branch head. A build tried again at the same iteration (the model API was unavailable, or
it was cut off) spans every try: from the first try's base to the last try's commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.record.cell import Cell
from harness.record.events import WAITING
from harness.record.fold import apply
from harness.record.ledger import Event, Record
from harness.record.position import Position


def base_after(base: str | None, event: Event) -> str | None:
    """The goal's base once `event` is read, given the base before it: the commit the goal's
    work is measured from, `control_commit` of the first `goal.started` (the commit its
    branch was made at), or of the last `run.started` (a recurring goal's run). The one place that says so: the ship commit's parent, `harness
    diff`'s start and `expect.globs` with `new: true` all read it from here."""
    if (base is None and event.type == "goal.started") or event.type == "run.started":
        # A recurring goal's next run is measured from the control commit it started from.
        found = event.data.get("control_commit")
        return found if isinstance(found, str) else None
    return base


def goal_base(records: Iterable[Record]) -> str | None:
    """The goal's base (`base_after`) after its whole ledger."""
    base: str | None = None
    for record in records:
        base = base_after(base, record.event)
    return base


@dataclass
class Changes:
    cell: Cell
    base: str | None = None  # the control commit the goal branch (or its last run) started at
    completed: str | None = None  # the commit goal.completed names
    # iteration -> (the commit before its build, the commit holding its change or None:
    # the branch head, when nothing started after it)
    builds: dict[int, tuple[str, str | None]] = field(default_factory=dict)

    def target(self, head: str | None) -> str | None:
        """The commit the goal's change ends at: the gate commit while it waits for a
        decision (what a signature binds), else the completed commit, else the branch head."""
        if self.cell.status in WAITING and self.cell.gate_commit:
            return self.cell.gate_commit
        return self.completed or head


def goal_changes(records: Iterable[Record], goal_id: str) -> Changes:
    """Fold the ledger, remembering the commits each build started from and ended at."""
    changes = Changes(Cell(goal=goal_id))
    open_builds: set[int] = set()  # finished builds whose commit the next step names
    for record in records:
        event = record.event
        changes.cell = apply(changes.cell, event, Position(event.seq, record.hash))
        data = event.data
        changes.base = base_after(changes.base, event)
        if event.type == "run.started":
            # A recurring goal's next run: its change is against today's control commit.
            changes.completed = None
            changes.builds.clear()
            open_builds.clear()
        elif event.type == "step.started":
            base = data.get("base")
            for iteration in open_builds:
                changes.builds[iteration] = (changes.builds[iteration][0], base)
            open_builds.clear()
            if event.step == "build" and isinstance(base, str):
                start = changes.builds.get(event.iteration, (base, None))[0]
                changes.builds[event.iteration] = (start, None)
        elif event.type == "step.finished" and event.step == "build":
            open_builds.add(event.iteration)
        elif event.type == "goal.completed":
            changes.completed = data.get("commit")
    return changes
