"""The fold: how each event changes the state cell.

Every field of the cell is a pure function of the ledger: `apply(cell, event)` is the only
way the cell changes. That is what lets a crash between a ledger append and the cell write be
rolled forward, and lets `verify` recompute the cell from the events alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from harness.record.cell import (
    Cell,
    InFlight,
    LifetimeCaps,
    LifetimeUsed,
    RuleCount,
    SessionTotals,
    Spend,
    Unavailable,
)
from harness.record.events import AGENT_STEPS, EventType, Status, StepName
from harness.record.ledger import Event
from harness.record.position import Position
from harness.record.revision import fresh_try, kept_deed_gate
from harness.record.rulecounts import counted, fired_rules

MAX_NOTE_CHARS = 8_000
MAX_SESSIONS = 50
MAX_UNAVAILABLE_CHARS = 500


_R = TypeVar("_R")


def replace(record: _R, **changes: Any) -> _R:
    """dataclasses.replace without its per-call field introspection: the fold calls this for
    every event (it was two thirds of verify's time). The cell's records have no
    __post_init__ and no init=False fields, so the result is the same."""
    fields = record.__dict__
    unknown = changes.keys() - fields.keys()
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    new = object.__new__(type(record))
    new.__dict__.update(fields, **changes)
    return new


def bounded(text: str | None, limit: int = MAX_NOTE_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters cut]\n" + text[-limit:]


def apply(cell: Cell, event: Event, position: Position) -> Cell:
    """The cell after `event`. Unknown event types only move the position."""
    # The ledger keeps any type it reads; one this version does not know gets no handler.
    handler = FOLD.get(cast(EventType, event.type))
    updated = handler(cell, event) if handler else cell
    return replace(updated, position=position, advanced_at=event.ts)


def fold(goal_id: str, events: Iterable[tuple[Event, Position]], start: Cell | None = None) -> Cell:
    cell = start or Cell(goal=goal_id)
    for event, position in events:
        cell = apply(cell, event, position)
    return cell


def _limits(data: Mapping[str, Any]) -> Spend:
    raw = data["limits"]
    return Spend(raw["iterations"], raw["seconds"], raw["cost_usd"], raw["turns"], raw["passes"])


def _caps(data: Mapping[str, Any]) -> LifetimeCaps:
    raw = data.get("lifetime") or {}
    return LifetimeCaps(raw.get("cost_usd"), raw.get("seconds"), raw.get("turns"), raw.get("runs"))


def _recurring(cell: Cell, event: Event) -> Cell:
    """`every_s` and the lifetime caps of a newly recorded goal version. A goal that becomes
    recurring counts the run it is in as its first (its spend so far included); one that
    stops being recurring keeps its lifetime record as it was."""
    every = event.data.get("every_s")
    if every is None:
        return cell if cell.every_s is None else replace(cell, every_s=None)
    cell = replace(cell, every_s=every, lifetime_limit=_caps(event.data))
    if cell.lifetime_used is None:
        used = cell.used
        spent = LifetimeUsed(used.cost_usd, used.seconds, used.turns, cell.run)
        cell = replace(cell, lifetime_used=spent)
    if cell.run_started_at is None:  # its first run: due at its start (schedule.py)
        cell = replace(cell, run_started_at=event.ts, run_due_at=event.ts)
    return cell


def _on_started(cell: Cell, event: Event) -> Cell:
    data = event.data
    steps = tuple(data["steps"])
    if data.get("every_s") is not None:
        cell = _recurring(replace(cell, run_base=data["control_commit"]), event)
    return replace(
        cell,
        status="running",
        step="plan" if "plan" in steps else "build",
        iteration=1,
        steps=steps,
        limit=_limits(data),
        no_progress_passes=data["no_progress_passes"],
        stale_after_s=data.get("stale_after_s"),
        goal_sha256=data["goal_sha256"],
        owners_sha256=data["owners_sha256"],
        owners_commit=data["control_commit"],
        destructive=tuple(data.get("command_classes", ())),
        destructive_detail=data.get("command_detail"),
        rule_counts=_commands_counted(cell, data),
    )


def _commands_counted(cell: Cell, data: Mapping[str, Any]) -> tuple[RuleCount, ...]:
    """The owner rules the declared step commands fired, counted once per approved version."""
    before = replace(cell, rule_counts=cell.rule_counts or ())
    fired = fired_rules(data, None, "command_warned")  # command_detail names no rule ids
    return counted(before, fired).rule_counts or ()


def _on_revised(cell: Cell, event: Event) -> Cell:
    data = event.data
    before = cell
    cell = _recurring(cell, event)
    cell = replace(
        cell,
        # Between two runs of a recurring goal the new version waits for the next run.
        status=cell.run_ended or "running",
        gate=None,
        gate_detail=None,
        steps=tuple(data["steps"]),
        limit=_limits(data),
        no_progress_passes=data["no_progress_passes"],
        stale_after_s=data.get("stale_after_s"),
        goal_sha256=data["goal_sha256"],
        owners_sha256=data["owners_sha256"],
        owners_commit=data["control_commit"],
        destructive=tuple(data.get("command_classes", ())),
        destructive_detail=data.get("command_detail"),
        approved_classes=(),
        unavailable=None,  # a new version (perhaps a fixed agent command) gets fresh tries
        rule_counts=_commands_counted(cell, data),
    )
    if not data.get("fresh_try"):
        return cell  # a revision recorded before fresh tries: folds as it always did
    return kept_deed_gate(before, fresh_try(cell))


def _on_step_started(cell: Cell, event: Event) -> Cell:
    # As the MAC'd ledger recorded it (the fold reads event data untyped throughout); a
    # cell holding anything but a StepName is refused when it is read (cell._check_words).
    step = cast(StepName, event.step or "")
    used = replace(cell.used, passes=cell.used.passes + 1)
    if step in AGENT_STEPS:
        used = replace(used, iterations=max(used.iterations, event.iteration))
    data = event.data
    flight = InFlight(
        step,
        event.iteration,
        data["call_id"],
        data["base"],
        data.get("runner", ""),
        data.get("lease_until", ""),
    )
    cell = replace(cell, status="running", used=used, in_flight=flight)
    given = [ref["name"] for ref in data.get("lessons", ())]
    if given:
        cell = replace(cell, lessons_given=tuple(dict.fromkeys((*cell.lessons_given, *given))))
    if step in AGENT_STEPS:
        # Destructive findings and their approvals belong to one build's changes.
        cell = replace(cell, destructive=(), destructive_detail=None, approved_classes=())
    return cell


def _on_step_cutoff(cell: Cell, event: Event) -> Cell:
    return replace(cell, in_flight=None)


def _spend(cell: Cell, event: Event) -> Cell:
    """A finished step's spend, added to the run's and (recurring) the lifetime's."""
    data, used = event.data, cell.used
    seconds = data["duration_s"] if event.step in AGENT_STEPS else 0.0
    cost, turns = data.get("cost_usd", 0.0), data.get("turns", 0)
    spent = replace(
        used,
        seconds=used.seconds + seconds,
        cost_usd=used.cost_usd + cost,
        turns=used.turns + turns,
    )
    life = cell.lifetime_used
    if life is None:
        return replace(cell, in_flight=None, used=spent)
    life = replace(
        life,
        seconds=life.seconds + seconds,
        cost_usd=life.cost_usd + cost,
        turns=life.turns + turns,
    )
    return replace(cell, in_flight=None, used=spent, lifetime_used=life)


def _repair(cell: Cell, failing: str | None, feedback: str | None, tree: str) -> Cell:
    fingerprint = hashlib.sha256(f"{failing}\0{tree}".encode()).hexdigest()
    same = fingerprint == cell.no_progress_fingerprint
    # A judge re-run by a revision's fresh try comes before its round's build: the build it
    # schedules is that round's, not a new one (no round of the budget is skipped).
    built = cell.used.iterations >= cell.iteration
    return replace(
        cell,
        step="build",
        iteration=cell.iteration + 1 if built else cell.iteration,
        failing_test=failing,
        feedback=bounded(feedback),
        judge_passed=False,
        review_passed=False,
        no_progress_count=cell.no_progress_count + 1 if same else 1,
        no_progress_fingerprint=fingerprint,
    )


def _on_step_finished(cell: Cell, event: Event) -> Cell:
    data = event.data
    cell = _spend(cell, event)
    step, passed = event.step, data.get("result") == "pass"
    if data.get("result") == "violation":
        # Its verdict cannot be trusted and its writes were undone: the same step runs
        # again after an unpark, at the same iteration, and no failing test is invented.
        return replace(cell, step=step)
    if step == "plan":
        return replace(cell, step="build", plan_notes=bounded(data.get("stdout_tail")))
    if step == "build":
        found = tuple(data.get("destructive_classes", ()))
        detail = data.get("destructive_detail")
        cell = _remember_session(cell, data)
        cell = replace(
            cell,
            destructive=found,
            destructive_detail=detail,
            warned=tuple(data.get("warned", ())),
        )
        cell = _build_counted(cell, data)
        if data.get("result") == "unavailable":
            return _unavailable(cell, event)
        if data.get("result") == "unrunnable":
            return _unrunnable(cell, event)
        return replace(
            cell,
            step="judge",
            judge_passed=False,
            review_passed=False,
            unavailable=None,  # it reached the model: the tries in a row start again
        )
    if step == "judge" and passed:
        after = "review" if "review" in cell.steps else None
        return replace(
            cell,
            step=after,
            judge_passed=True,
            failing_test=None,
            feedback=None,
            no_progress_count=0,
            no_progress_fingerprint=None,
        )
    if step == "judge":
        return _repair(
            cell,
            data.get("failing_test") or "(judge failed)",
            data.get("output_tail"),
            data["tree"],
        )
    if step == "review" and passed:
        return replace(cell, step=None, review_passed=True)
    if step == "review":
        return _repair(cell, "(review findings)", data.get("stdout_tail"), data["tree"])
    return replace(cell, step=None)


def _unavailable(cell: Cell, event: Event) -> Cell:
    """The model API failed: not the agent's work. No judge runs, the build is tried again
    at the same iteration, and its round is not counted (its seconds, cost and turns are)."""
    data = event.data
    used = _uncounted(cell.used, event.iteration)
    before = cell.unavailable.count if cell.unavailable is not None else 0
    unavailable = Unavailable(
        count=before + 1,
        tries=data["unavailable_tries"],
        message=bounded(data.get("unavailable"), MAX_UNAVAILABLE_CHARS) or "",
        retry_at=data.get("retry_at"),
    )
    return replace(cell, step="build", used=used, unavailable=unavailable)


def _unrunnable(cell: Cell, event: Event) -> Cell:
    """The build's command could not run (exit 127 or 126): the agent never ran. No judge
    runs, the build runs again at the same iteration once unparked, and its round is not
    counted (its pass and seconds are). It reached no model API: a run of outages ends."""
    used = _uncounted(cell.used, event.iteration)
    return replace(cell, step="build", used=used, unavailable=None)


def _uncounted(used: Spend, iteration: int) -> Spend:
    """`used` without the round of `iteration`, which its build's start had counted."""
    return replace(used, iterations=max(0, min(used.iterations, iteration - 1)))


def _remember_session(cell: Cell, data: Mapping[str, Any]) -> Cell:
    """Keep the totals an agent session last reported, to turn the next into an increase."""
    session = data.get("session")
    if not session:
        return cell
    kept = [s for s in cell.sessions if s.name != session]
    tokens = data.get("reported_tokens")  # absent in records written before tokens were kept
    entry = SessionTotals(
        session,
        data.get("reported_cost_usd") or 0.0,
        data.get("reported_turns") or 0,
        (int(tokens[0]), int(tokens[1]), int(tokens[2])) if tokens else None,
    )
    return replace(cell, sessions=(*kept, entry)[-MAX_SESSIONS:])


def _on_done_blocked(cell: Cell, event: Event) -> Cell:
    data = event.data
    failed, short = data.get("lessons_failed") or [], data.get("expect_short") or []
    if failed:
        failing = f"lesson:{failed[0]}"
    elif data["missing"] or not short:
        failing = f"expect.files: {', '.join(data['missing'])}"
    else:
        failing = short[0]
    return _repair(cell, failing, data.get("detail"), data["tree"])


def _on_gated(cell: Cell, event: Event) -> Cell:
    data = event.data
    return replace(
        cell,
        status=data["status"],
        gate=data["reason"],
        gate_detail=data.get("detail"),
        gate_commit=data.get("commit"),
    )


def _ended(cell: Cell, status: Status) -> Status | None:
    """How a recurring goal's run ended (None for a one-shot goal: its end is its status)."""
    return status if cell.every_s is not None else cell.run_ended


def _on_completed(cell: Cell, event: Event) -> Cell:
    ended = _ended(cell, "completed")
    return replace(
        cell, status="completed", step=None, gate=None, gate_detail=None, run_ended=ended
    )


def _on_cancelled(cell: Cell, event: Event) -> Cell:
    ended = _ended(cell, "cancelled")
    return replace(cell, status="cancelled", gate=None, gate_detail=None, run_ended=ended)


def _on_failed(cell: Cell, event: Event) -> Cell:
    detail, ended = event.data.get("detail"), _ended(cell, "failed")
    return replace(cell, status="failed", step=None, gate=None, gate_detail=detail, run_ended=ended)


def _on_run_started(cell: Cell, event: Event) -> Cell:
    """A recurring goal's next run: the per-run state starts afresh; the lifetime goes on."""
    data, life = event.data, cell.lifetime_used or LifetimeUsed()
    return replace(
        cell,
        status="running",
        step="plan" if "plan" in cell.steps else "build",
        iteration=1,
        failing_test=None,
        feedback=None,
        plan_notes=None,
        used=Spend(),
        gate=None,
        gate_detail=None,
        gate_commit=None,
        no_progress_count=0,
        no_progress_fingerprint=None,
        in_flight=None,
        judge_passed=False,
        review_passed=False,
        destructive=(),
        destructive_detail=None,
        approved_classes=(),
        sessions=(),
        lessons_given=(),
        unavailable=None,
        warned=(),
        run=data["run"],
        run_started_at=event.ts,
        run_due_at=data["due_at"],
        run_base=data["control_commit"],
        run_ended=None,
        lifetime_used=replace(life, runs=life.runs + 1),
    )


def _on_decision(cell: Cell, event: Event) -> Cell:
    data = event.data
    decision, crossed = data["decision"], data["gate"]
    cell = replace(cell, status="running", gate=None, gate_detail=None, gate_commit=None)
    if decision == "ship":
        return replace(cell, step="ship")
    if crossed == "ship_outcome_unknown":
        # The owner checked the outside world: it shipped. Never retried on its own.
        return replace(cell, status="completed", step=None, run_ended=_ended(cell, "completed"))
    if "limits" in data:
        cell = replace(cell, limit=_limits(data))
    if crossed.startswith("destructive:"):
        cell = replace(cell, approved_classes=(*cell.approved_classes, crossed.split(":", 1)[1]))
    if crossed == "no_progress":
        cell = replace(cell, no_progress_count=0, no_progress_fingerprint=None)
    if crossed == "agent_unavailable":
        cell = replace(cell, unavailable=None)  # the owner asks for new tries, now
    return cell


def _on_owners_rotated(cell: Cell, event: Event) -> Cell:
    data = event.data
    cell = replace(cell, owners_sha256=data["owners_sha256"], owners_commit=data["owners_commit"])
    if cell.gate == "owners_changed":
        # Between two runs of a recurring goal it goes back to how its last run ended.
        cell = replace(cell, status=cell.run_ended or "running", gate=None, gate_detail=None)
    return cell


def _build_counted(cell: Cell, data: Mapping[str, Any]) -> Cell:
    fired = fired_rules(data, "destructive", "warned")
    return counted(cell, fired) if fired else cell


def _on_lesson_checked(cell: Cell, event: Event) -> Cell:
    data = event.data
    if data.get("passed") is True:
        return cell
    rule = f"lesson:{data['name']}"
    cell = counted(cell, {rule: "warned" if data.get("warned") else "hit"})
    if not data.get("warned"):
        return cell
    return replace(cell, warned=(*cell.warned, f"{rule} check failed"))


def _unchanged(cell: Cell, event: Event) -> Cell:
    """Events that record what happened without changing what happens next."""
    return cell


# One handler per event type; `apply` moves the position for every event, known or not.
FOLD: dict[EventType, Callable[[Cell, Event], Cell]] = {
    "goal.started": _on_started,
    "goal.revised": _on_revised,
    "step.started": _on_step_started,
    "lesson.checked": _on_lesson_checked,
    "step.interrupted": _unchanged,
    "step.cutoff": _on_step_cutoff,
    "step.finished": _on_step_finished,
    "done.blocked": _on_done_blocked,
    "goal.gated": _on_gated,
    "owners.rotated": _on_owners_rotated,
    "decision.used": _on_decision,
    "goal.completed": _on_completed,
    "goal.cancelled": _on_cancelled,
    "goal.resumed": _unchanged,
    "goal.failed": _on_failed,
    "run.started": _on_run_started,
}
