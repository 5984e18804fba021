"""The evidence a reviewer reads, per iteration, gathered from the events as they stream by:
the objective, each build's diff and lessons, the judge's and review's output, each lesson
check's name and result, destructive findings, the ship step's output; and at a gate what a
signature binds and the command that signs. report.md and the HTML report both show it.

Memory is bounded: the last REPORT_ITERATIONS iterations are kept, each with bounded text.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from harness.record.cell import Cell
from harness.record.egress import markdown as egress_markdown
from harness.record.evidence import (
    SHOWN_DIFF_CHARS,
    binds,
    diff_command,
    head_of,
    sign_command,
    tail_of,
)
from harness.record.ledger import Event
from harness.record.visible import block, one_line

REPORT_ITERATIONS = 10
OBJECTIVE_CHARS = 4000


@dataclass(frozen=True)
class Check:
    """A lesson check at the done gate: its name and how it ended."""

    name: str
    passed: bool
    exit_code: object
    output: str


@dataclass
class StepNote:
    step: str
    result: str
    output: str = ""  # the tail a reviewer reads (judge, review, ship)
    failing: str = ""


@dataclass
class IterationNote:
    number: int
    lessons: list[str] = field(default_factory=list)
    build: str = ""  # one line: exit, files changed
    diff: str | None = None  # None: the record holds no diff (older records)
    destructive: list[str] = field(default_factory=list)
    steps: list[StepNote] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    blocked: str = ""
    egress: list[str] = field(default_factory=list)  # a table per step with an allowlist


def _text(value: object) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


class IterationEvidence:
    def __init__(self, goal_id: str) -> None:
        self.goal_id = goal_id
        self.objective = ""
        self.iterations: OrderedDict[int, IterationNote] = OrderedDict()
        self.dropped = 0  # iterations no longer kept

    def note(self, number: int) -> IterationNote:
        found = self.iterations.get(number)
        if found is None:
            found = self.iterations[number] = IterationNote(number)
            if len(self.iterations) > REPORT_ITERATIONS:
                self.iterations.popitem(last=False)
                self.dropped += 1
        return found

    def add(self, event: Event) -> None:
        data, kind = event.data, event.type
        if kind in ("goal.started", "goal.revised") and data.get("objective"):
            self.objective = head_of(_text(data["objective"]), OBJECTIVE_CHARS, "see the goal file")
        elif kind == "step.started" and event.step == "build" and data.get("lessons"):
            note = self.note(event.iteration)
            names = [_text(ref.get("name")) for ref in data["lessons"] if isinstance(ref, dict)]
            note.lessons = list(dict.fromkeys([*note.lessons, *names]))[:20]
        elif kind == "step.finished":
            self._finished(event)
        elif kind == "lesson.checked":
            check = Check(
                _text(data.get("name")),
                data.get("passed") is True,
                data.get("exit_code"),
                tail_of(_text(data.get("output_tail")), 10),
            )
            self.note(event.iteration).checks.append(check)
        elif kind == "done.blocked":
            failed = data.get("lessons_failed") or []
            missing = data.get("missing") or []
            why = f"lesson check failed: {', '.join(map(_text, failed))}" if failed else ""
            short = [_text(x) for x in data.get("expect_short") or []]
            why = why or "; ".join(
                ([f"missing: {', '.join(map(_text, missing))}"] if missing else []) + short
            )
            self.note(event.iteration).blocked = why

    def _finished(self, event: Event) -> None:
        data, note = event.data, self.note(event.iteration)
        result = _text(data.get("result")) or ("timed out" if data.get("timed_out") else "done")
        table = egress_markdown(f"{_text(event.step)}[{event.iteration}]", data)
        if table:
            note.egress.append(table)
        if event.step == "build":
            changed = data.get("changed")
            count = len(changed) if isinstance(changed, list) else 0
            files = "1 file" if count == 1 else f"{count} files"
            note.build = f"{result} exit={_text(data.get('exit_code'))}, {files} changed"
            if "diff" in data:
                rest = diff_command(self.goal_id, event.iteration)
                note.diff = head_of(_text(data["diff"]), SHOWN_DIFF_CHARS, rest)
            found = data.get("destructive")
            note.destructive = [_text(x) for x in found[:20]] if isinstance(found, list) else []
            return
        output = data.get("stdout_tail") if event.step == "review" else data.get("output_tail")
        shown = "" if result == "pass" and event.step != "ship" else tail_of(_text(output))
        step = StepNote(_text(event.step), result, shown, _text(data.get("failing_test")))
        note.steps.append(step)

    # ---- report.md ---------------------------------------------------------------------

    def markdown(self, cell: Cell) -> str:
        parts = []
        if self.objective:
            parts.append(f"## Objective\n\n{_fence(self.objective, 'text')}")
        sign = sign_command(cell, self.goal_id)
        if sign is not None:
            bound = "".join(f"- {name}: `{one_line(value)}`\n" for name, value in binds(cell))
            parts.append(
                f"## Decision needed: `{one_line(cell.gate)}`\n\n"
                f"Review the change: `{diff_command(self.goal_id)}`. A signature binds:\n\n"
                f"{bound}\nSign with:\n\n```sh\n{sign}\n```\n"
            )
        if self.iterations:
            parts.append("## Iterations\n")
            if self.dropped:
                parts.append(
                    f"\nShowing the last {len(self.iterations)} iterations; "
                    f"`harness replay {self.goal_id}` shows every event.\n"
                )
            parts += [_iteration_md(note) for note in self.iterations.values()]
        return "\n".join(parts) + "\n" if parts else ""


def _iteration_md(note: IterationNote) -> str:
    lines = [f"### Iteration {note.number}\n"]
    if note.lessons:
        lines.append(f"- lessons given: {', '.join(one_line(x) for x in note.lessons)}")
    if note.build:
        lines.append(f"- build: {one_line(note.build)}")
    for hit in note.destructive:
        lines.append(f"- destructive: {one_line(hit)}")
    for step in note.steps:
        failing = f", failing `{one_line(step.failing)}`" if step.failing else ""
        lines.append(f"- {one_line(step.step)}: {one_line(step.result)}{failing}")
    for check in note.checks:
        verdict = "passed" if check.passed else "failed"
        lines.append(
            f"- lesson `{one_line(check.name)}` check {verdict} (exit {one_line(check.exit_code)})"
        )
    if note.blocked:
        lines.append(f"- done gate blocked: {one_line(note.blocked)}")
    return "\n".join(lines) + "\n" + _iteration_blocks(note)


def _iteration_blocks(note: IterationNote) -> str:
    """The iteration's code blocks: the build's diff, then each output worth reading."""
    text = ""
    if note.diff is not None:
        text += f"\nWhat build {note.number} changed:\n\n{_fence(note.diff or '(nothing)', 'diff')}"
    for step in note.steps:
        if step.output:
            text += f"\n{step.step.capitalize()} output:\n\n{_fence(step.output, 'text')}"
    for table in note.egress:
        text += "\n" + table
    for check in note.checks:
        if check.output and not check.passed:
            text += (
                f"\nLesson `{one_line(check.name)}` check output:\n\n{_fence(check.output, 'text')}"
            )
    return text


def _fence(text: str, lang: str) -> str:
    """A code block no line of `text` can close (a longer fence than any run inside)."""
    shown = block(text).rstrip("\n")
    run, ticks = 0, 0
    for char in shown:
        run = run + 1 if char == "`" else 0
        ticks = max(ticks, run)
    fence = "`" * max(3, ticks + 1)
    return f"{fence}{lang}\n{shown}\n{fence}\n"
