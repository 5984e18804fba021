"""One renderer from events to text. `harness run` prints `text_line` for each event as it
is appended; `harness replay` prints the same from the ledger alone."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from harness.cell import Cell, apply
from harness.fsutil import canonical_json
from harness.ledger import Event, Position, Record

REPORT_TAIL_EVENTS = 200
_CONTROL = {i: f"\\x{i:02x}" for i in range(32)} | {10: "\\n", 9: "\\t", 13: "\\r", 127: "\\x7f"}


def _clean(text: object) -> str:
    """One line, no control characters: agent output can never forge a second line."""
    shown = str(text)
    # Every character _CONTROL maps is non-printable, so printable text needs no translate.
    return shown if shown.isprintable() else shown.translate(_CONTROL)


def _money(value: float) -> str:
    return f"${value:.4f}"


def _step_finished(event: Event) -> str:
    data = event.data
    result = "timed out" if data.get("timed_out") else data.get("result", "done")
    parts = [
        f"{event.step}[{event.iteration}] {result}",
        f"exit={data.get('exit_code')}",
        f"{data.get('duration_s', 0.0):.1f}s",
    ]
    if event.step == "build":
        parts += [
            f"cost={_money(data.get('cost_usd', 0.0))}",
            f"turns={data.get('turns', 0)}",
            f"changed={len(data.get('changed', []))}",
        ]
    if data.get("failing_test"):
        parts.append(f"failing={_clean(data['failing_test'])}")
    return " ".join(parts)


def _limits(data: Mapping[str, Any]) -> str:
    limits = data["limits"]
    return " ".join(
        f"{key}={limits[key]}" for key in ("iterations", "seconds", "cost_usd", "turns", "passes")
    )


def describe(event: Event) -> str:
    data, kind = event.data, event.type
    if kind in ("goal.started", "goal.revised"):
        who = ",".join(data.get("approved_by", []))
        return f"{kind.split('.')[1]} sha256={data['goal_sha256'][:12]} approved-by={who} limits: {_limits(data)}"
    if kind == "step.started":
        given = ", ".join(ref["name"] for ref in data.get("lessons", ()))
        return f"{event.step}[{event.iteration}] started" + (
            f" (lessons: {given})" if given else ""
        )
    if kind == "lesson.checked":
        verdict = "passed" if data["passed"] else "failed"
        return f"lesson {data['name']} check {verdict} exit={data['exit_code']}"
    if kind == "step.interrupted":
        return f"{event.step}[{event.iteration}] interrupted by {data['signal']}"
    if kind == "step.cutoff":
        return f"{event.step}[{event.iteration}] was cut off; work in progress: {len(data.get('changed', []))} files"
    if kind == "step.finished":
        return _step_finished(event)
    if kind == "done.blocked" and data.get("lessons_failed"):
        return f"done gate blocked: lesson check failed: {', '.join(data['lessons_failed'])}"
    if kind == "done.blocked":
        return f"done gate blocked: missing {', '.join(data['missing'])}"
    if kind == "goal.gated":
        detail = f" ({data['detail']})" if data.get("detail") else ""
        return f"{data['status']} gate={data['reason']}{detail}"
    if kind == "owners.rotated":
        who = ",".join(data.get("signers", []))
        return f"owners rotated to sha256={data['owners_sha256'][:12]} by {who}"
    if kind == "decision.used":
        return f"decision {data['decision']} by {','.join(data.get('signers', []))}"
    if kind in ("goal.completed", "goal.cancelled", "goal.resumed", "goal.failed"):
        detail = f" ({data['detail']})" if data.get("detail") else ""
        return kind.split(".")[1] + detail
    return kind


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


class MarkdownReport:
    """Accumulates events; `render()` gives report.md. Memory is bounded by the tail size."""

    def __init__(self, goal_id: str) -> None:
        self.goal_id = goal_id
        self.tail: deque[str] = deque(maxlen=REPORT_TAIL_EVENTS)
        self.count = 0

    def add(self, event: Event) -> None:
        self.tail.append(text_line(event))
        self.count += 1

    def render(self, cell: Cell) -> str:
        rows = [
            ("status", cell.status),
            ("gate", cell.gate or "-"),
            ("gate detail", cell.gate_detail or "-"),
            ("next step", cell.step or "-"),
            ("iteration", str(cell.iteration)),
            ("failing test", cell.failing_test or "-"),
            ("budget used", _budget(cell)),
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
            f"## Events\n\n{note}```text\n{''.join(self.tail)}```\n"
        )


def _md_cell(value: str) -> str:
    return _clean(value).replace("|", "\\|")


def json_event(record: Record) -> bytes:
    event = record.event
    return canonical_json(
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


def replay_chunks(records: Iterable[Record], goal_id: str, fmt: str) -> Iterator[bytes]:
    """The bytes of `harness replay --format fmt`, streamed as the records are read."""
    if fmt == "text":
        for record in records:
            yield text_line(record.event).encode()
        return
    cell = Cell(goal=goal_id)
    report = MarkdownReport(goal_id)
    if fmt == "json":
        yield b'{"events":['
    for n, record in enumerate(records):
        cell = apply(cell, record.event, Position(record.event.seq, record.hash))
        if fmt == "md":
            report.add(record.event)
        else:
            yield (b"," if n else b"") + json_event(record)
    if fmt == "md":
        yield report.render(cell).encode()
        return
    tail = {"goal": goal_id, "state": cell.to_dict()}
    yield b"]," + canonical_json(tail)[1:] + b"\n"
