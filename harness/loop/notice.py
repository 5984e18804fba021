"""What a transition notification says: the document POSTed and given to the command.

Everything in it comes from the goal's cell after the advance, so what one runner tells is
what any other would (docs/specs/notify.md, "What"). Keys are only ever added: a consumer
that routes on `status` or `gate` keeps working.
"""

from __future__ import annotations

from harness.record.cell import Cell
from harness.record.events import WAITING
from harness.record.evidence import sign_command
from harness.record.visible import one_line

# A gate detail can hold lines of a step's output (ship_failed): a page shows its head.
DETAIL_CHARS = 1000
KEY = "--key <owner key>"
# Gates crossed by something other than a decision at the gate (docs/specs/loop.md).
_OTHER_WAY = {
    "goal_changed": "harness approve {id} " + KEY,
    "lifetime_exhausted": "raise lifetime in goals/{id}.yaml, then harness approve {id} " + KEY,
    "owners_changed": "harness rotate-owners {id} " + KEY,
}


def transition_document(
    repository: str, goal_id: str, before: tuple[str, str | None, int], after: Cell
) -> dict[str, object]:
    run = after.run if after.every_s is not None else None
    reason = reason_of(after)
    detail = _bounded(after.gate_detail)
    act = act_command(after, goal_id)
    return {
        "goal": goal_id,
        "status": after.status,
        "gate": after.gate,
        "previous": before[0],
        "iteration": after.iteration,
        "ledger_seq": after.position.seq,
        "repository": repository,
        "run": run,
        "reason": reason,
        "gate_detail": detail,
        "failing_test": after.failing_test,
        "next": act,
        # Slack, Mattermost and Discord-compatible hooks show `text` as it is.
        "text": one_line(_text(repository, goal_id, after, run, reason, detail, act)),
    }


def reason_of(cell: Cell) -> str | None:
    """Why the goal stopped: its gate, or for a failed run what ended it (the only way a
    run fails is its budget running out: `goal.failed` `reason: budget_exhausted`)."""
    if cell.gate is not None:
        return cell.gate
    return "budget_exhausted" if cell.status == "failed" else None


def act_command(cell: Cell, goal_id: str) -> str:
    """The command a human runs next: the decision the goal waits for, else the record
    of what happened (a recurring goal's: this run's)."""
    if cell.status in WAITING and cell.gate in _OTHER_WAY:
        return _OTHER_WAY[cell.gate].format(id=goal_id)
    sign = sign_command(cell, goal_id)
    if sign is not None:
        return sign
    shown = f"harness replay {goal_id}"
    return f"{shown} --run {cell.run}" if cell.every_s is not None else shown


def _text(
    repository: str,
    goal_id: str,
    after: Cell,
    run: int | None,
    reason: str | None,
    detail: str | None,
    act: str,
) -> str:
    gate = f" at gate {after.gate}" if after.gate else ""
    in_run = f" in run {run}" if run is not None else ""
    text = f"goal-harness: {goal_id} is {after.status}{gate}{in_run} ({repository})"
    why = [reason] if reason is not None and reason != after.gate else []
    why += [detail] if detail else []
    text += f": {': '.join(why)}" if why else ""
    text += f"; failing test {after.failing_test}" if after.failing_test else ""
    return f"{text}; next: {act}"


def _bounded(detail: str | None) -> str | None:
    if detail is None or len(detail) <= DETAIL_CHARS:
        return detail
    return detail[:DETAIL_CHARS] + f"… ({len(detail) - DETAIL_CHARS:,} more characters)"
