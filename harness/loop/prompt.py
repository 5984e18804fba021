"""The prompt a step's command reads from HARNESS_PROMPT_FILE (and on its standard input)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.loop.lessons import prompt_section
from harness.model.goal import Goal
from harness.model.lessons import Lesson
from harness.record.cell import Cell


def build_prompt(goal: Goal, cell: Cell, lessons: Sequence[Lesson] = ()) -> str:
    parts = [
        f"Goal: {goal.id}",
        f"Iteration: {cell.iteration} of {cell.limit.iterations}",
        "",
        "Objective:",
        goal.objective.rstrip("\n"),
        "",
    ]
    if cell.plan_notes:
        parts += ["Plan:", cell.plan_notes.rstrip("\n"), ""]
    if lessons:
        parts += [prompt_section(lessons).rstrip("\n"), ""]
    if cell.failing_test:
        parts += [
            "This is a repair round: the previous attempt did not pass.",
            f"Failing: {cell.failing_test}",
            "Output tail:",
            (cell.feedback or "").rstrip("\n"),
            "",
        ]
    if goal.expect_files:
        parts += ["These files must exist when you are done: " + ", ".join(goal.expect_files), ""]
    for expect in goal.expect_globs:
        bound = f"at least {expect.min}" + (
            f" and at most {expect.max}" if expect.max is not None else ""
        )
        new = " new" if expect.new else ""
        parts += [f"When you are done, {bound}{new} files must match {expect.glob}", ""]
    return "\n".join(parts)
