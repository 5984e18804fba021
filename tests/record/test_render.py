"""render: the words for each event type, as run prints them and replay re-renders them."""

from __future__ import annotations

from typing import Any

import pytest

from harness.record.cell import Cell
from harness.record.ledger import Event
from harness.record.position import GENESIS
from harness.record.render import MarkdownReport, containment, describe, text_line


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


# ---- how each step was contained (issue 27, item 9) ----------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"sandbox": "bwrap"}, "contained (bwrap), network shared"),
        ({"sandbox": "bwrap", "network": "off"}, "contained (bwrap), network off"),
        ({"sandbox": "off"}, "not contained (sandbox: off), network shared"),
        ({"sandbox": "unavailable"}, "not contained: bwrap unavailable, network shared"),
        ({}, "unknown (record older than the field), network shared"),
        ({"sandbox": "jail\x1b[2J"}, "unknown (sandbox: jail\\x1b[2J), network shared"),
    ],
)
def test_each_containment_reads_as_documented(data: dict[str, Any], words: str) -> None:
    assert containment(data) == words


def _run_started(sandbox: str | None, network: dict[str, str] | None = None) -> list[Event]:
    """Two iterations' steps as the controller records them, `sandbox` on each start
    (None: a record older than the field); `network` adds to the judges' data."""
    field = {} if sandbox is None else {"sandbox": sandbox}
    events = []
    for seq, (step, iteration) in enumerate([("build", 1), ("judge", 1), ("build", 2)]):
        extra = (network or {}) if step == "judge" else {}
        data = {"call_id": f"c{seq}"} | field | extra
        events.append(
            Event(
                seq + 1,
                "2026-11-30T01:00:00.000Z",
                "step.started",
                "g1",
                step,
                iteration,
                data,
                GENESIS,
            )
        )
    return events


def _report(events: list[Event]) -> str:
    report = MarkdownReport("g1")
    for one in events:
        report.add(one)
    return report.render(Cell(goal="g1"))


def _changed(a: str, b: str) -> list[tuple[str, str]]:
    return [(x, y) for x, y in zip(a.splitlines(), b.splitlines(), strict=True) if x != y]


def test_a_contained_and_an_uncontained_report_differ_only_in_the_containment() -> None:
    contained, bare = _report(_run_started("bwrap")), _report(_run_started("off"))
    assert _changed(contained, bare) == [
        (
            "| containment | build ×2, judge ×1: contained (bwrap), network shared |",
            "| containment | build ×2, judge ×1: not contained (sandbox: off), network shared |",
        )
    ]


def test_a_step_without_network_is_named_apart() -> None:
    shown = _report(_run_started("bwrap", {"network": "off"}))
    assert (
        "| containment | build ×2: contained (bwrap), network shared;"
        " judge ×1: contained (bwrap), network off |\n"
    ) in shown


def test_a_record_older_than_the_field_says_unknown() -> None:
    shown = _report(_run_started(None))
    assert "| containment | build ×2, judge ×1: unknown (record older than the field)," in shown
    assert "| containment | no step yet |" in _report([])
