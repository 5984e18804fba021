"""The lessons' checks at the done gate: each check of a lesson a build was given runs
read-only, like the judge, and watched like every step; each result is one
`lesson.checked` event, and a check that changed the worktree stops the goal.

The checks run through the goal's `execute.StepCommands` (contained as a step is) and are
recorded through its recorder; this module never imports the controller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.loop.contain.layer import LayerFailure
from harness.loop.contain.sandbox import Contained
from harness.loop.execute import StepCommands
from harness.loop.guards import StepWatch
from harness.loop.recorder import fit_text
from harness.loop.steps import StepResult, cannot_start, child_env, run_step
from harness.model.lessons import Lesson
from harness.record.events import GateReason

MAX_SHOWN_CHANGED = 20  # changed paths named in a read-only violation's detail


def check_lessons(
    commands: StepCommands, lessons: Sequence[Lesson]
) -> list[tuple[Lesson, StepResult]] | None:
    """Run the check of every lesson of `lessons` a build was given. The failed checks that
    block the done gate (not `enforce: warn`), or None when a check stopped the goal."""
    rec = commands.rec
    checks = [x for x in lessons if x.name in rec.cell.lessons_given and x.check]
    watch = StepWatch(rec.wt) if checks else None
    results = [(lesson, _run_check(commands, lesson)) for lesson in checks]
    tampered = watch.tampered() if watch else None  # before a byte is appended
    for lesson, result in results:
        rec.emit("lesson.checked", None, rec.cell.iteration, checked_data(lesson, result))
    changed = watch.changed_paths() if watch and not tampered else []
    if tampered or changed:
        names = ", ".join(x.name for x in checks)
        reason: GateReason = "tamper" if tampered else "read_only_violation"
        what = tampered or "is read-only but changed: " + ", ".join(changed[:MAX_SHOWN_CHANGED])
        rec.gate("needs_attention", reason, f"the lesson check of {names} {what}")
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


def _run_check(commands: StepCommands, lesson: Lesson) -> StepResult:
    assert lesson.check is not None
    env = child_env(
        commands.ctx.base_env,
        commands.ctx.control.config.step_scrub(),
        {"HARNESS_GOAL": commands.goal.id, "HARNESS_STEP": "lesson-check"},
    )
    wt = commands.rec.wt

    def once(box: Contained) -> StepResult:
        timeout = lesson.check_timeout_s
        return run_step(
            box.argv, wt.path, box.env, b"", timeout, bwrap=box.bwrap, prepare=box.prepare
        )

    try:
        return commands.run_contained(once, "lesson-check", lesson.check, env)
    except LayerFailure as exc:
        return cannot_start(str(exc))


def _passed(result: StepResult) -> bool:
    return result.exit_code == 0 and not result.timed_out
