"""What a goal needs next, as `harness status` shows it (docs/specs/cli.md, "What a goal
needs next"): whether a `harness run <id>` now would move it (`runnable`), and whether it
waits for a human's signed decision instead.

It asks the question `harness run` asks (`rest.rests`), then, for a goal waiting at a gate,
the ones `advance._move_on` asks after loading it: a goal whose owners file changed moves
only with a signed rotation, one whose goal file changed only with a run approval of the
new bytes, one at its gate only with an owner-signed decision bound to its exact state. The
signatures are checked here too (no secret is needed for that), so a forged record on the
control ref never makes a goal look runnable.
"""

from __future__ import annotations

import hashlib

from harness.errors import HarnessError, TrustFailure
from harness.loop.control import Control
from harness.loop.rest import control_rests
from harness.record.cell import Cell, pending_classes
from harness.record.events import WAITING
from harness.trust.approvals import NotApproved, find_run_approval, verify_record
from harness.trust.decisions import find_decision


def runnable(control: Control, goal_id: str, cell: Cell, now: str) -> bool:
    """Whether `harness run` at `now` would do work for the goal: a step (also a paused
    goal's), a due recurring run, a gate to record, a signed decision, rotation or new
    approved version to act on. False when it rests (finished, its next run not due; at a
    gate with nothing signed for it) or its model API's next try is not due. A goal whose
    files `harness run` would refuse (exit 2 or 3) counts as runnable: the run says why;
    one with no goal file on the control ref does not (no run visits it). The caller leaves
    out what it knows: waiting for approval, held by another runner."""
    if not control.has_goal(goal_id):
        return False
    try:
        if control_rests(control, goal_id, cell, now) or _retry_waits(cell, now):
            return False
        return cell.status not in WAITING or _unblocked(control, goal_id, cell)
    except HarnessError:
        return True


def _retry_waits(cell: Cell, now: str) -> bool:
    """The model API was unavailable and the build's next try is still to come (as
    `GoalRunner.retry_pending` asks)."""
    unavailable = cell.unavailable
    if unavailable is None or cell.in_flight is not None or pending_classes(cell):
        return False
    return cell.status == "running" and cell.step == "build" and unavailable.waiting(now)


def _unblocked(control: Control, goal_id: str, cell: Cell) -> bool:
    """A goal at a gate, not resting as recorded: what `harness run` would act on."""
    if control.owners_moved(cell):
        return _rotation_signed(control, goal_id, cell)
    sha256 = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest()
    source = f"goals/{goal_id}.approval"
    records, owners = control.approvals(goal_id), control.owners()
    if sha256 != cell.goal_sha256:
        try:
            find_run_approval(records, owners, goal_id, sha256, source)
        except NotApproved:
            return False  # the new version waits for its approval
        return True
    return find_decision(records, owners, goal_id, cell, source) is not None


def _rotation_signed(control: Control, goal_id: str, cell: Cell) -> bool:
    """A `rotate-owners` decision for today's owners file, signed by an owner the goal is
    pinned to (as `advance._rotate` accepts it)."""
    pinned = control.owners_at(cell.owners_commit, cell.owners_sha256)
    wanted = (goal_id, cell.goal_sha256, f"rotate-owners {control.owners_sha256}")
    for record in control.approvals(goal_id):
        statement = record.statement
        if (statement.goal, statement.sha256, statement.decision) != wanted:
            continue
        try:
            verify_record(record, pinned, f"goals/{goal_id}.approval")
        except TrustFailure:
            continue
        return True
    return False
