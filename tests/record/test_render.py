"""render: the words for each event type, as run prints them and replay re-renders them."""

from __future__ import annotations

from typing import Any

import pytest

from harness.record.ledger import Event
from harness.record.position import GENESIS
from harness.record.render import describe, text_line


def event(type: str, data: dict[str, Any], step: str | None = "build") -> Event:
    return Event(7, "2026-11-30T01:00:00.000Z", type, "g1", step, 2, data, GENESIS)


@pytest.mark.parametrize(
    ("type", "data", "step", "words"),
    [
        ("step.started", {}, "build", "build[2] started"),
        ("step.started", {"lessons": []}, "build", "build[2] started"),
        ("step.started", {"lessons": [{"name": ""}]}, "build", "build[2] started"),
        (
            "step.started",
            {"lessons": [{"name": "a"}, {"name": "b"}]},
            "judge",
            "judge[2] started (lessons: a, b)",
        ),
        (
            "step.finished",
            {"exit_code": 0, "duration_s": 1.25, "cost_usd": 0.5, "turns": 3, "changed": ["x"]},
            "build",
            "build[2] done exit=0 1.2s cost=$0.5000 turns=3 changed=1",
        ),
        (
            "step.finished",
            {"result": "fail", "exit_code": 1, "failing_test": "t::x\n"},
            "judge",
            "judge[2] fail exit=1 0.0s failing=t::x\\n",
        ),
        ("step.finished", {"timed_out": True}, "review", "review[2] timed out exit=None 0.0s"),
        (
            "goal.gated",
            {"status": "parked_at_eyes", "reason": "ship", "detail": "d"},
            None,
            "parked_at_eyes gate=ship (d)",
        ),
        ("goal.completed", {}, None, "completed"),
        ("some.future.type", {}, None, "some.future.type"),
    ],
)
def test_each_event_reads_as_documented(
    type: str, data: dict[str, Any], step: str | None, words: str
) -> None:
    assert describe(event(type, data, step)) == words


def test_a_line_is_one_line_whatever_the_agent_wrote() -> None:
    line = text_line(event("goal.gated", {"status": "s", "reason": "r", "detail": "a\nb\x1b"}))
    assert line == "2026-11-30T01:00:00.000Z g1 #7 s gate=r (a\\nb\\x1b)\n"
