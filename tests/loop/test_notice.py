"""loop/notice.py: the command a notification tells a human to run, for every kind of
stop, and a text that stays one bounded line."""

from __future__ import annotations

import pytest

from harness.loop.notice import DETAIL_CHARS, act_command, reason_of, transition_document
from harness.record.cell import Cell, Spend

KEY = "--key <owner key>"


@pytest.mark.parametrize(
    ("status", "gate", "every_s", "expected"),
    [
        ("parked_at_eyes", "ship", None, f"harness ship g1 {KEY}"),
        ("needs_attention", "ship_failed", None, f"harness ship g1 {KEY}"),
        ("parked_at_eyes", "destructive:auth", None, f"harness unpark g1 {KEY}"),
        ("needs_attention", "tamper", 86400, f"harness unpark g1 {KEY}"),
        (
            "needs_attention",
            "budget_exhausted",
            None,
            f"harness unpark g1 {KEY} --extend-budget iterations=N",
        ),
        ("needs_attention", "goal_changed", None, f"harness approve g1 {KEY}"),
        ("needs_attention", "owners_changed", 86400, f"harness rotate-owners g1 {KEY}"),
        (
            "needs_attention",
            "lifetime_exhausted",
            86400,
            f"raise lifetime in goals/g1.yaml, then harness approve g1 {KEY}",
        ),
        ("completed", None, None, "harness replay g1"),
        ("completed", None, 86400, "harness replay g1 --run 4"),
        ("failed", None, 86400, "harness replay g1 --run 4"),
    ],
)
def test_the_command_to_act_fits_the_stop(
    status: str, gate: str | None, every_s: int | None, expected: str
) -> None:
    cell = Cell(goal="g1", status=status, gate=gate, every_s=every_s, run=4)  # type: ignore[arg-type]
    assert act_command(cell, "g1") == expected


def test_a_failed_run_names_its_reason_and_a_completed_one_none() -> None:
    assert reason_of(Cell(goal="g1", status="failed", every_s=60)) == "budget_exhausted"
    assert reason_of(Cell(goal="g1", status="completed", every_s=60)) is None
    assert reason_of(Cell(goal="g1", status="needs_attention", gate="no_progress")) == "no_progress"


def test_the_text_is_one_line_and_the_detail_bounded() -> None:
    detail = "ship step exited 1:\n" + "x" * (DETAIL_CHARS * 2)
    cell = Cell(
        goal="g1",
        status="needs_attention",
        gate="ship_failed",
        gate_detail=detail,
        failing_test="t::a\nb",
        used=Spend(),
    )
    told = transition_document("repo", "g1", ("running", None, 1), cell)
    text = str(told["text"])
    assert "\n" not in text and "\\n" in text
    assert len(str(told["gate_detail"])) < DETAIL_CHARS + 40
    assert str(told["gate_detail"]).endswith(f"… ({len(detail) - DETAIL_CHARS:,} more characters)")
    assert text.endswith(f"; failing test t::a\\nb; next: harness ship g1 {KEY}")
    assert (told["run"], told["previous"], told["reason"]) == (None, "running", "ship_failed")
