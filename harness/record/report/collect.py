"""One pass over the records: fold them into the cell and keep the bounded page model.

`HANDLERS` says what each event type adds to the page; it has an entry for every type in
`harness.record.events.EVENT_TYPES`, and a type not known to this version is shown as-is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from harness.record.cell import Cell
from harness.record.egress import summary, table_rows
from harness.record.events import EventType
from harness.record.fold import apply
from harness.record.ledger import Event, Record
from harness.record.notes import IterationEvidence
from harness.record.position import Position
from harness.record.render import Containment, containment, describe
from harness.record.report.cells import tone_of
from harness.record.report.model import (
    HEAD_ENTRIES,
    HEAD_ITERATIONS,
    TAIL_ENTRIES,
    TAIL_ITERATIONS,
    Decision,
    Gate,
    Iteration,
    MarkRow,
    Outcome,
    Point,
    Row,
    Sampler,
    StepRow,
    Window,
)
from harness.record.report.safe import as_text, cut, finite, names
from harness.record.runs import Runs

SHOWN_PATHS = 5


def _step_label(event: Event) -> tuple[str, str]:
    data, result = event.data, event.data.get("result")
    if data.get("timed_out"):
        return "timed out", "fail"
    if result in ("tamper", "violation"):
        return ("tamper" if result == "tamper" else "read-only violation"), "fail"
    if result == "unavailable":
        return "agent unavailable", "warn"
    if result == "unrunnable":
        return f"could not run (exit {as_text(data.get('exit_code'))})", "fail"
    if event.step == "build":
        code = data.get("exit_code")
        return ("done", "ok") if code == 0 else (f"exit {as_text(code)}", "fail")
    if result in ("pass", "fail"):
        return str(result), str(result)
    return as_text(result) or "done", "neutral"


def _bound(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """What a signature was bound to, as far as the event says; a missing key is left out."""
    return tuple(
        (key.replace("_", " "), cut(as_text(data[key]), 200)) for key in keys if data.get(key)
    )


def _first_line(value: object) -> str:
    return next((line for line in as_text(value).splitlines() if line.strip()), "")


def _step_detail(event: Event) -> str:
    data = event.data
    if data.get("result") in ("tamper", "violation"):
        return "changed: " + ", ".join(names(data.get("changed"))[:SHOWN_PATHS])
    if data.get("result") == "unavailable":
        count, tries = as_text(data.get("unavailable_try")), as_text(data.get("unavailable_tries"))
        due = f", next after {as_text(data.get('retry_at'))}" if data.get("retry_at") else ""
        message = as_text(data.get("unavailable"))
        return f"model API unavailable (try {count} of {tries}{due}): {message}"
    if data.get("result") == "unrunnable":
        return as_text(data.get("unrunnable"))
    if event.step == "build":
        error = as_text(data.get("agent_error"))
        return as_text(data.get("summary")) + (f"\nagent error: {error}" if error else "")
    if event.step == "judge":
        failing = as_text(data.get("failing_test"))
        return f"failing: {failing}" if failing else ""
    if event.step in ("review", "plan") and data.get("result") != "pass":
        return _first_line(data.get("stdout_tail"))
    return ""


def outcome(event: Event) -> Outcome:
    data = event.data
    label, tone = _step_label(event)
    build = event.step == "build"
    changed = data.get("changed")
    paths = names(changed)
    return Outcome(
        seq=event.seq,
        label=label,
        tone=tone,
        duration_s=finite(data.get("duration_s")),
        cost_usd=finite(data.get("cost_usd")) if build else None,
        turns=int(finite(data.get("turns"))) if build else None,
        changed=len(changed) if isinstance(changed, list) else None,
        paths=tuple(cut(p, 120) for p in paths[:SHOWN_PATHS]),
        detail=cut(_step_detail(event)),
    )


_END_TONES = {"goal.completed": "pass", "goal.failed": "fail"}


class Collector:
    """Folds the records into the cell and keeps the bounded parts of the page."""

    def __init__(self, goal_id: str) -> None:
        self.cell = Cell(goal=goal_id)
        self.events = 0
        self.first_ts = self.last_ts = self.last_event = ""
        self.approvers: tuple[str, ...] = ()
        self.iterations: Window[Iteration] = Window(HEAD_ITERATIONS, TAIL_ITERATIONS)
        self.decisions: Window[Decision] = Window(HEAD_ENTRIES, TAIL_ENTRIES)
        self.gates: Window[Gate] = Window(HEAD_ENTRIES, TAIL_ENTRIES)
        self.chart = Sampler()
        self.open_steps: dict[tuple[str, int], StepRow] = {}
        self.cut_off: set[tuple[str, int]] = set()
        self.open_gate: Gate | None = None
        self.evidence = IterationEvidence(goal_id)  # what a reviewer reads (record/notes.py)
        self.runs = Runs()  # a recurring goal's runs (record/runs.py)
        self.containment = Containment()  # every step's, for the header

    def add(self, record: Record) -> None:
        event = record.event
        before = self.cell
        self.cell = apply(before, event, Position(event.seq, record.hash))
        self.events += 1
        self.first_ts = self.first_ts or event.ts
        self.last_ts = event.ts
        self.last_event = cut(describe(event), 200)
        # The ledger may hold a type this version does not name; it still gets its row.
        handler = HANDLERS.get(cast(EventType, event.type), Collector.on_other)
        handler(self, event, before)
        self.evidence.add(event)
        self.runs.add(event)
        self.containment.add(event)

    def row(self, iteration: int, row: Row) -> None:
        """Rows group by iteration in ledger order; a new number starts a new group."""
        group = self.iterations.last()
        if group is None or group.number != iteration:
            group = Iteration(iteration)
            self.iterations.add(group)
        group.rows.add(row)

    def mark(self, event: Event, kind: str, label: str, tone: str, detail: str) -> None:
        row = MarkRow(event.seq, event.ts, kind, cut(label, 200), tone, cut(detail))
        self.row(event.iteration, row)

    def on_approved(self, event: Event, before: Cell) -> None:
        data = event.data
        self.approvers = names(data.get("approved_by"))
        kind = event.type.split(".")[1]
        bound = (("goal sha256", as_text(data.get("goal_sha256"))),)
        crossed = before.gate if event.type == "goal.revised" else None
        self.decisions.add(
            Decision(event.seq, event.ts, f"run (goal {kind})", self.approvers, bound, crossed)
        )
        if event.type == "goal.revised":
            self.resolve(f"cleared by goal revision #{event.seq}")
            who = ", ".join(self.approvers)
            self.mark(event, "revised", "goal revised", "info", f"approved by {who}")

    def on_step_started(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = StepRow(
            event.seq, event.ts, key[0], as_text(event.data.get("call_id")), key in self.cut_off
        )
        row.containment = containment(event.data)
        self.cut_off.discard(key)
        self.open_steps[key] = row
        self.row(event.iteration, row)

    def on_step_cutoff(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = self.open_steps.pop(key, None)
        if row is None:
            row = StepRow(event.seq, event.ts, key[0], as_text(event.data.get("call_id")), False)
            self.row(event.iteration, row)
        changed = event.data.get("changed")
        row.cutoff = (event.seq, len(changed) if isinstance(changed, list) else 0)
        self.cut_off.add(key)

    def on_step_finished(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = self.open_steps.pop(key, None)
        if row is None:
            row = StepRow(event.seq, event.ts, key[0], as_text(event.data.get("call_id")), False)
            self.row(event.iteration, row)
        row.outcome = outcome(event)
        said = summary(event.data)
        if said is not None:
            row.egress = (said, tuple(table_rows(event.data)))
        if event.step == "build":
            self.chart.add(Point(self.chart.count + 1, self.cell.used, self.cell.limit))

    def on_done_blocked(self, event: Event, before: Cell) -> None:
        failed = ", ".join(names(event.data.get("lessons_failed")))
        missing = ", ".join(names(event.data.get("missing")))
        short = list(names(event.data.get("expect_short")))
        gaps = ([f"missing: {missing}"] if missing else []) + short
        why = f"lesson check failed: {failed}" if failed else "; ".join(gaps)
        self.mark(event, "blocked", "done gate blocked", "warn", why)

    def on_lesson_checked(self, event: Event, before: Cell) -> None:
        data = event.data
        passed = data.get("passed") is True
        verdict = "passed" if passed else "failed"
        label = f"lesson {as_text(data.get('name'))} check {verdict}"
        detail = f"exit {as_text(data.get('exit_code'))}"
        if not passed and data.get("output_tail"):
            detail += ": " + _first_line(data.get("output_tail"))
        self.mark(event, "lesson", label, "pass" if passed else "fail", detail)

    def on_gated(self, event: Event, before: Cell) -> None:
        data = event.data
        status, reason = as_text(data.get("status")), as_text(data.get("reason"))
        detail = cut(as_text(data.get("detail")))
        commit = cut(as_text(data.get("commit")), 80)
        if commit and commit not in detail:  # the ship gate's detail already names it
            detail += f"\nat commit {commit}"
        gate = Gate(event.seq, event.ts, event.iteration, status, cut(reason, 200), detail)
        if isinstance(data.get("change"), str):
            gate.change = as_text(data["change"])
        self.resolve(f"replaced by gate #{event.seq}")
        self.gates.add(gate)
        self.open_gate = gate
        self.mark(event, "gate", f"{status}: {reason}", tone_of(status), detail)

    def on_decision(self, event: Event, before: Cell) -> None:
        data = event.data
        decision = as_text(data.get("decision")) or "(unnamed)"
        signers = names(data.get("signers"))
        bound = _bound(data, ("commit", "ledger", "signature_sha256"))
        if "limits" in data:
            bound += (("new limits", as_text(data["limits"])),)
        # The event names the gate it crossed; older events did not, so fall back to the fold.
        crossed = as_text(data["gate"]) if data.get("gate") else before.gate
        self.decisions.add(
            Decision(event.seq, event.ts, cut(decision, 200), signers, bound, crossed)
        )
        self.resolve(f"crossed by decision {cut(decision, 80)} #{event.seq}")
        who = ", ".join(signers) or "(no signer recorded)"
        self.mark(event, "decision", f"decision {decision}", "info", f"signed by {who}")

    def on_owners_rotated(self, event: Event, before: Cell) -> None:
        signers = names(event.data.get("signers"))
        bound = _bound(event.data, ("owners_sha256", "owners_commit"))
        self.decisions.add(
            Decision(event.seq, event.ts, "rotate owners", signers, bound, before.gate)
        )
        if before.gate == "owners_changed":
            self.resolve(f"cleared by owners rotation #{event.seq}")
        who = ", ".join(signers) or "(no signer recorded)"
        self.mark(event, "owners", "owners rotated", "info", f"signed by {who}")

    def on_end(self, event: Event, before: Cell) -> None:
        kind = event.type.split(".")[1]
        if event.type == "goal.cancelled":
            self.resolve(f"goal cancelled #{event.seq}")
        data = event.data
        detail = " · ".join(as_text(data[k]) for k in ("detail", "commit", "by") if data.get(k))
        self.mark(event, "end", kind, _END_TONES.get(event.type, "neutral"), detail)

    def on_run_started(self, event: Event, before: Cell) -> None:
        """A recurring goal's next run: the run before it goes into the list of runs."""
        self.mark(event, "end", "run.started", "neutral", f"run {event.data['run']}")

    def on_other(self, event: Event, before: Cell) -> None:
        """A type the page has no view of its own for: one neutral row naming it."""
        self.mark(event, "other", event.type, "neutral", "")

    def resolve(self, how: str) -> None:
        """Say how the open gate ended; a folded gate is simply no longer on the page."""
        if self.open_gate is not None:
            self.open_gate.outcome = how
            self.open_gate = None


# Every event type has an entry, so a new type is a decision here, not a silent default.
HANDLERS: dict[EventType, Callable[[Collector, Event, Cell], None]] = {
    "goal.started": Collector.on_approved,
    "goal.revised": Collector.on_approved,
    "step.started": Collector.on_step_started,
    "lesson.checked": Collector.on_lesson_checked,
    "step.interrupted": Collector.on_other,
    "step.cutoff": Collector.on_step_cutoff,
    "step.finished": Collector.on_step_finished,
    "done.blocked": Collector.on_done_blocked,
    "goal.gated": Collector.on_gated,
    "decision.used": Collector.on_decision,
    "owners.rotated": Collector.on_owners_rotated,
    "goal.completed": Collector.on_end,
    "goal.failed": Collector.on_end,
    "goal.cancelled": Collector.on_end,
    "goal.resumed": Collector.on_end,
    "run.started": Collector.on_run_started,
}
