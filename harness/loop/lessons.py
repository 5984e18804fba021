"""The lessons a build is given (`select`; `given_lessons` adds the one whose check failed)
and the block the build prompt shows of them (`prompt_section`). A lesson file's parsing
and matching are the model's (`model/lessons.py`); its checks at the done gate run from
`lesson_checks`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from harness.model.lessons import Lesson

MAX_PROMPT_SECTION_CHARS = 16_000
MAX_SHOWN_CHECK_CHARS = 200
PROMPT_HEADING = "Lessons from this team:"
# Room kept at the end of the prompt section for the "left out" note.
_NOTE_ROOM = 80


def select(
    lessons: Sequence[Lesson], objective: str, failing_test: str | None
) -> tuple[Lesson, ...]:
    """The lessons a build is given: those that match, by name, as many as the prompt holds.

    Bounded here rather than only in prompt_section, so what the ledger records as given
    is exactly what the agent read.
    """
    matched = sorted(
        (lesson for lesson in lessons if lesson.matches(objective, failing_test)),
        key=lambda lesson: lesson.name,
    )
    return _fitting(matched)[0]


def given_lessons(
    lessons: Sequence[Lesson], objective: str, failing_test: str | None
) -> tuple[Lesson, ...]:
    """What a build is given: the lessons `select` picks, and first the one whose check
    failed at the done gate (the failing test `lesson:<name>`), even when it matches nothing."""
    chosen = select(lessons, objective, failing_test)
    failed = [x for x in lessons if failing_test == f"lesson:{x.name}" and x not in chosen]
    return (*failed, *chosen)


# ---------------------------------------------------------------------------------------
# The prompt


def prompt_section(lessons: Sequence[Lesson]) -> str:
    """The block put into the build prompt; empty when there are no lessons.

    At most MAX_PROMPT_SECTION_CHARS characters: lessons that do not fit, in the order
    given, are left out and counted in a closing note.
    """
    kept, left_out = _fitting(lessons)
    if not kept:
        return ""
    lines = [PROMPT_HEADING, *(_entry(lesson) for lesson in kept)]
    if left_out:
        lines.append(f"({len(left_out)} more matching lessons were left out for length.)")
    return "\n".join(lines) + "\n"


def _fitting(lessons: Sequence[Lesson]) -> tuple[tuple[Lesson, ...], tuple[Lesson, ...]]:
    """The longest leading run of `lessons` whose entries fit the section, and the rest."""
    room = MAX_PROMPT_SECTION_CHARS - len(PROMPT_HEADING) - 1 - _NOTE_ROOM
    for index, lesson in enumerate(lessons):
        room -= len(_entry(lesson)) + 1
        if room < 0:
            return tuple(lessons[:index]), tuple(lessons[index:])
    return tuple(lessons), ()


def _entry(lesson: Lesson) -> str:
    first, *rest = lesson.text.strip().splitlines()
    lines = [f"- {lesson.name}: {first}", *(f"  {line}" if line else "" for line in rest)]
    if lesson.check is not None:
        lines.append(f"  Checked when you are done: `{_shown_command(lesson.check)}` must pass.")
    return "\n".join(lines)


def _shown_command(argv: tuple[str, ...]) -> str:
    text = shlex.join(argv)
    if len(text) <= MAX_SHOWN_CHECK_CHARS:
        return text
    return text[: MAX_SHOWN_CHECK_CHARS - 1] + "…"
