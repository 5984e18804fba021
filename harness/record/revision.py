"""What a newly approved goal version (`goal.revised` with `fresh_try`) does to the cell
beyond taking the new version's settings (docs/specs/loop.md, "A revision: a fresh try").
Only revisions recorded with `fresh_try` come here: older ones fold as they always did."""

from __future__ import annotations

from dataclasses import replace

from harness.record.cell import Cell
from harness.record.events import DESTRUCTIVE_PREFIX


def fresh_try(cell: Cell) -> Cell:
    """A revision's fresh try: the failures the old version judged are no evidence against
    the new one, so the no-progress count starts again, and a repair build that was next
    waits for the new judge's verdict on the tree as it is (perhaps it passes already).
    The budget is the run's, kept (G2)."""
    cell = replace(cell, no_progress_count=0, no_progress_fingerprint=None)
    repair_next = cell.step == "build" and cell.failing_test is not None
    if repair_next and cell.in_flight is None and cell.run_ended is None:
        cell = replace(cell, step="judge", judge_passed=False, review_passed=False)
    return cell


# Gates about what a step did, not how the goal tries: a revision (the owner's signature
# on a goal file) does not cross them; only the decision bound to the exact commit does
# (trust.md, "Which decision crosses which gate").
DEED_GATES = frozenset(
    {
        "tamper",
        "read_only_violation",
        "secret_in_change",
        "ship_outcome_unknown",
        "ship_failed",
        "egress_denied",
    }
)


def deed_gate(gate: str | None) -> bool:
    return gate is not None and (gate in DEED_GATES or gate.startswith(DESTRUCTIVE_PREFIX))


def kept_deed_gate(before: Cell, cell: Cell) -> Cell:
    """The revised cell, still waiting at `before`'s gate when that gate is a deed's, with
    the classes the build was found doing (and those already approved) kept beside the new
    version's declared ones."""
    if not deed_gate(before.gate):
        return cell
    return replace(
        cell,
        status=before.status,
        gate=before.gate,
        gate_detail=before.gate_detail,
        destructive=tuple(dict.fromkeys(before.destructive + cell.destructive)),
        destructive_detail=before.destructive_detail or cell.destructive_detail,
        approved_classes=before.approved_classes,
    )
