"""The lessons' checks at the done gate: each check of a lesson a build was given runs
read-only, like the judge, and watched like every step; each result is one
`lesson.checked` event, and a check that changed the worktree stops the goal.

The runner (`controller.GoalRunner`) is passed in as a `CheckHost`: this module runs the
commands and records what they did through it, and never imports the controller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from harness.loop.context import RunContext
from harness.loop.guards import StepWatch
from harness.loop.layer import LayerFailure
from harness.loop.recorder import fit_text
from harness.loop.sandbox import Contained
from harness.loop.steps import StepResult, cannot_start, child_env, run_step
from harness.model.goal import Goal
from harness.model.lessons import Lesson
from harness.record.cell import Cell
from harness.record.events import EventType, GateReason, Status, StepName
from harness.store.worktree import Worktree

MAX_SHOWN_CHANGED = 20  # changed paths named in a read-only violation's detail


class CheckHost(Protocol):
    """What running the checks needs of the goal's runner."""

    @property
    def ctx(self) -> RunContext: ...
    @property
    def goal(self) -> Goal: ...
    @property
    def wt(self) -> Worktree: ...
    @property
    def cell(self) -> Cell: ...
    @property
    def lessons(self) -> tuple[Lesson, ...]: ...

    def contained(
        self, step: str, argv: Sequence[str], env: dict[str, str]
    ) -> AbstractContextManager[Contained]: ...

    def emit(
        self, type: EventType, step: StepName | None, iteration: int, data: Mapping[str, Any]
    ) -> None: ...

    def gate(self, status: Status, reason: GateReason, detail: str) -> None: ...


def check_lessons(host: CheckHost) -> list[tuple[Lesson, StepResult]] | None:
    """Run the check of every lesson a build was given. The failed checks that block the
    done gate (not `enforce: warn`), or None when a check stopped the goal."""
    checks = [x for x in host.lessons if x.name in host.cell.lessons_given and x.check]
    watch = StepWatch(host.wt) if checks else None
    results = [(lesson, _run_check(host, lesson)) for lesson in checks]
    tampered = watch.tampered() if watch else None  # before a byte is appended
    for lesson, result in results:
        host.emit("lesson.checked", None, host.cell.iteration, checked_data(lesson, result))
    changed = watch.changed_paths() if watch and not tampered else []
    if tampered or changed:
        names = ", ".join(x.name for x in checks)
        reason: GateReason = "tamper" if tampered else "read_only_violation"
        what = tampered or "is read-only but changed: " + ", ".join(changed[:MAX_SHOWN_CHANGED])
        host.gate("needs_attention", reason, f"the lesson check of {names} {what}")
        return None
    blocking = [(x, r) for x, r in results if x.check_enforce != "warn"]
    return [(x, r) for x, r in blocking if not _passed(r)]


def checked_data(lesson: Lesson, result: StepResult) -> dict[str, Any]:
    """The `lesson.checked` event's data for one check's result."""
    passed = _passed(result)
    output = {"output_tail": fit_text(result.output_tail, 4000)}
    data: dict[str, Any] = {"exit_code": result.exit_code, "passed": passed} | output
    if not passed and lesson.check_enforce == "warn":
        data["warned"] = True  # recorded and shown, never blocks the done gate
    return lesson.as_ref() | data


def _run_check(host: CheckHost, lesson: Lesson) -> StepResult:
    assert lesson.check is not None
    env = child_env(
        host.ctx.base_env,
        host.ctx.control.config.scrub_env,
        {"HARNESS_GOAL": host.goal.id, "HARNESS_STEP": "lesson-check"},
    )
    try:
        with host.contained("lesson-check", lesson.check, env) as box:
            return run_step(box.argv, host.wt.path, box.env, b"", lesson.check_timeout_s)
    except LayerFailure as exc:
        return cannot_start(str(exc))


def _passed(result: StepResult) -> bool:
    return result.exit_code == 0 and not result.timed_out
