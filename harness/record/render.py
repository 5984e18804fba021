"""One renderer from events to text. `harness run` prints `text_line` for each event as it
is appended; `harness replay` prints the same from the ledger alone."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from harness.record.cell import Cell, Unavailable
from harness.record.egress import summary
from harness.record.events import EventType
from harness.record.fold import apply
from harness.record.ledger import Event, Record
from harness.record.notes import IterationEvidence
from harness.record.position import Position
from harness.record.runs import Runs
from harness.record.visible import one_line

REPORT_TAIL_EVENTS = 200


def _clean(text: object) -> str:
    """One line, nothing a terminal acts on: agent output can never forge a second line."""
    return one_line(text)


def _money(value: float) -> str:
    return f"${value:.4f}"


def _step_finished(event: Event) -> str:
    get = event.data.get
    result = "timed out" if get("timed_out") else get("result", "done")
    ended = f"killed by {_clean(get('signal'))}" if get("signal") else f"exit={get('exit_code')}"
    line = f"{event.step}[{event.iteration}] {result} {ended} {get('duration_s', 0.0):.1f}s"
    if event.step == "build":
        cost = get("cost_usd", 0.0)
        line += f" cost=${cost:.4f} turns={get('turns', 0)} changed={len(get('changed', ()))}"
        warned = get("warned") or []
        if warned:
            line += f" warned={len(warned)} ({_clean(warned[0])}{', …' if len(warned) > 1 else ''})"
    egress = summary(event.data)
    if get("result") == "unavailable":
        tries = _tries(get("unavailable_try"), get("unavailable_tries"), get("retry_at"))
        line = f"{line} {tries}: {get('unavailable')}"
    elif get("failing_test"):
        line = f"{line} failing={_clean(get('failing_test'))}"
    return f"{line} {egress}" if egress else line


def _tries(count: object, tries: object, retry_at: object) -> str:
    due = f", next after {retry_at}" if retry_at else ""
    return f"(try {count} of {tries}{due})"


def unavailable_text(unavailable: Unavailable) -> str:
    """One line for `status` and the report: how often the model API failed, and why."""
    u = unavailable
    return _clean(f"model API unavailable {_tries(u.count, u.tries, u.retry_at)}: {u.message}")


def _limits(data: Mapping[str, Any]) -> str:
    limits = data["limits"]
    return " ".join(
        f"{key}={limits[key]}" for key in ("iterations", "seconds", "cost_usd", "turns", "passes")
    )


def _goal_started(event: Event) -> str:
    data = event.data
    who = ",".join(data.get("approved_by", []))
    kind = event.type.split(".")[1]
    text = f"{kind} sha256={data['goal_sha256'][:12]} approved-by={who} limits: {_limits(data)}"
    return text + _uncontained(data)


def _step_started(event: Event) -> str:
    lessons = event.data.get("lessons")
    given = ", ".join(ref["name"] for ref in lessons) if lessons else ""
    started = f"{event.step}[{event.iteration}] started" + _uncontained(event.data)
    network = event.data.get("network")
    if network == "off":
        started += " (network off)"
    elif network == "allowlist":
        started += " (network: allowlist)"
    return f"{started} (lessons: {given})" if given else started


def _uncontained(data: Mapping[str, Any]) -> str:
    """`auto` found no working bwrap: every line that starts work says the step is bare.
    (`off` is the owners' own choice, recorded in the data and not repeated here.)"""
    return " (not contained: bwrap unavailable)" if data.get("sandbox") == "unavailable" else ""


_NETWORK_WORDS = {"off": "network off", "allowlist": "network by allowlist"}


def containment(data: Mapping[str, Any]) -> str:
    """How a step was contained, from its `step.started` data, in the reports' words."""
    sandbox = data.get("sandbox")
    network = _NETWORK_WORDS.get(str(data.get("network")), "network shared")
    if sandbox == "bwrap":
        return f"contained (bwrap), {network}"
    if sandbox == "off":
        return f"not contained (sandbox: off), {network}"
    if sandbox == "unavailable":
        return f"not contained: bwrap unavailable, {network}"
    if sandbox is None:  # before the field; a step could not lose its network then
        return f"unknown (record older than the field), {network}"
    return f"unknown (sandbox: {_clean(sandbox)}), {network}"


class Containment:
    """Every step's containment over the whole record, for the reports: how many steps of
    each name ran each way, grouped by the words, in the order first seen. Bounded by the
    names and ways, not by the ledger's length."""

    def __init__(self) -> None:
        self.ways: dict[str, dict[str, int]] = {}

    def add(self, event: Event) -> None:
        if event.type == "step.started":
            steps = self.ways.setdefault(containment(event.data), {})
            steps[_clean(event.step)] = steps.get(_clean(event.step), 0) + 1

    def text(self) -> str:
        """`build ×2, judge ×2: contained (bwrap), network shared; ship ×1: …`."""
        return "; ".join(
            ", ".join(f"{step} ×{count}" for step, count in steps.items()) + f": {way}"
            for way, steps in self.ways.items()
        )


def _lesson_checked(event: Event) -> str:
    data = event.data
    verdict = "passed" if data["passed"] else "failed"
    if data.get("warned"):
        verdict += " (warned: enforce: warn, not a gate)"
    return f"lesson {data['name']} check {verdict} exit={data['exit_code']}"


def _step_interrupted(event: Event) -> str:
    return f"{event.step}[{event.iteration}] interrupted by {event.data['signal']}"


def _step_cutoff(event: Event) -> str:
    changed = len(event.data.get("changed", []))
    return f"{event.step}[{event.iteration}] was cut off; work in progress: {changed} files"


def _done_blocked(event: Event) -> str:
    data = event.data
    if data.get("lessons_failed"):
        return f"done gate blocked: lesson check failed: {', '.join(data['lessons_failed'])}"
    shown = [f"missing {', '.join(data['missing'])}"] if data["missing"] else []
    shown += data.get("expect_short") or []
    return "done gate blocked: " + "; ".join(shown)


def _goal_gated(event: Event) -> str:
    data = event.data
    detail = f" ({data['detail']})" if data.get("detail") else ""
    return f"{data['status']} gate={data['reason']}{detail}"


def _owners_rotated(event: Event) -> str:
    who = ",".join(event.data.get("signers", []))
    return f"owners rotated to sha256={event.data['owners_sha256'][:12]} by {who}"


def _decision_used(event: Event) -> str:
    return f"decision {event.data['decision']} by {','.join(event.data.get('signers', []))}"


def _goal_ended(event: Event) -> str:
    detail = f" ({event.data['detail']})" if event.data.get("detail") else ""
    return event.type.split(".")[1] + detail


def _run_started(event: Event) -> str:
    data = event.data
    return (
        f"run {data['run']} started from {str(data['control_commit'])[:12]} (due {data['due_at']})"
    )


# One entry per event type (a replay of a million events looks each one up once).
DESCRIBE: dict[EventType, Callable[[Event], str]] = {
    "goal.started": _goal_started,
    "goal.revised": _goal_started,
    "step.started": _step_started,
    "lesson.checked": _lesson_checked,
    "step.interrupted": _step_interrupted,
    "step.cutoff": _step_cutoff,
    "step.finished": _step_finished,
    "done.blocked": _done_blocked,
    "goal.gated": _goal_gated,
    "owners.rotated": _owners_rotated,
    "decision.used": _decision_used,
    "goal.completed": _goal_ended,
    "goal.cancelled": _goal_ended,
    "goal.resumed": _goal_ended,
    "goal.failed": _goal_ended,
    "run.started": _run_started,
}


def describe(event: Event) -> str:
    """The event in words; an event type this version does not know is shown by name."""
    shown = DESCRIBE.get(cast(EventType, event.type))
    return event.type if shown is None else shown(event)


def text_line(event: Event) -> str:
    return _clean(f"{event.ts} {event.goal} #{event.seq} {describe(event)}") + "\n"


def _budget(cell: Cell) -> str:
    used, limit = cell.used, cell.limit
    return " · ".join(
        [
            f"iterations {used.iterations}/{limit.iterations}",
            f"agent seconds {used.seconds:.1f}/{limit.seconds}",
            f"cost {_money(used.cost_usd)}/{_money(limit.cost_usd)}",
            f"turns {used.turns}/{limit.turns}",
            f"passes {used.passes}/{limit.passes}",
        ]
    )


def rules_text(cell: Cell) -> str:
    """`config:0 hits 0 warned 2; lesson:strict hits 1 warned 0`: each owner rule's counts
    over the goal's record (record/rulecounts.py), for the reports."""
    counts = cell.rule_counts or ()
    return "; ".join(f"{c.rule} hits {c.hits} warned {c.warned}" for c in counts)


class MarkdownReport:
    """Accumulates events; `render()` gives report.md. Memory is bounded by the tail size
    and by the evidence of the last REPORT_ITERATIONS iterations (record/evidence.py)."""

    def __init__(self, goal_id: str) -> None:
        self.goal_id = goal_id
        self.tail: deque[str] = deque(maxlen=REPORT_TAIL_EVENTS)
        self.count = 0
        self.evidence = IterationEvidence(goal_id)
        self.runs = Runs()
        self.containment = Containment()

    def add(self, event: Event) -> None:
        self.tail.append(text_line(event))
        self.count += 1
        self.evidence.add(event)
        self.runs.add(event)
        self.containment.add(event)

    def render(self, cell: Cell) -> str:
        rows = [
            ("status", cell.status),
            ("gate", cell.gate or "-"),
            ("gate detail", cell.gate_detail or "-"),
            ("next step", cell.step or "-"),
            ("iteration", str(cell.iteration)),
            ("failing test", cell.failing_test or "-"),
            *([("agent", unavailable_text(cell.unavailable))] if cell.unavailable else []),
            ("containment", self.containment.text() or "no step yet"),
            ("budget used", _budget(cell)),
            *([("owner rules", rules_text(cell))] if cell.rule_counts else []),
            ("goal sha256", cell.goal_sha256 or "-"),
            ("ledger head", str(cell.position)),
        ]
        table = "".join(f"| {name} | {_md_cell(value)} |\n" for name, value in rows)
        shown = len(self.tail)
        note = (
            ""
            if shown == self.count
            else (
                f"Showing the last {shown} of {self.count} events; `harness replay {self.goal_id}` shows all.\n\n"
            )
        )
        return (
            f"# Goal `{self.goal_id}`\n\n| field | value |\n|---|---|\n{table}\n"
            f"{self.evidence.markdown(cell)}"
            f"{self.runs.markdown()}"
            f"## Events\n\n{note}```text\n{''.join(self.tail)}```\n"
        )


def _md_cell(value: str) -> str:
    return _clean(value).replace("|", "\\|")


def _json(value: Any) -> bytes:
    """Canonical JSON with every non-ASCII character escaped: the same values, and nothing
    a terminal acts on (C1 controls, bidi, U+2028 are raw UTF-8 in canonical JSON)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def json_event(record: Record) -> bytes:
    event = record.event
    return _json(
        {
            "seq": event.seq,
            "ts": event.ts,
            "type": event.type,
            "step": event.step,
            "iteration": event.iteration,
            "data": dict(event.data),
            "hash": record.hash,
        }
    )


def replay_chunks(
    records: Iterable[Record], goal_id: str, fmt: str, run: int | None = None
) -> Iterator[bytes]:
    """The bytes of `harness replay --format fmt`, streamed as the records are read.
    `run`: only that run's events are shown; the state is the fold up to its end."""
    if fmt == "text":
        for record in records:
            if run is None or record.event.run == run:
                yield text_line(record.event).encode()
        return
    cell = Cell(goal=goal_id)
    report = MarkdownReport(goal_id)
    if fmt == "json":
        yield b'{"events":['
    n = 0
    for record in records:
        if run is not None and record.event.run > run:
            continue  # read and checked, not shown
        cell = apply(cell, record.event, Position(record.event.seq, record.hash))
        if run is not None and record.event.run != run:
            continue
        if fmt == "md":
            report.add(record.event)
        else:
            yield (b"," if n else b"") + json_event(record)
        n += 1
    if fmt == "md":
        yield report.render(cell).encode()
        return
    tail = {"goal": goal_id, "state": cell.to_dict()}
    yield b"]," + _json(tail)[1:] + b"\n"
