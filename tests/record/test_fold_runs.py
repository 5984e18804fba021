"""The fold of a recurring goal (issue 17): run.started starts the per-run state afresh,
the lifetime spend is summed over every run, and a one-shot goal keeps every default."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from harness.errors import TrustFailure
from harness.record.cell import Cell, LifetimeCaps, LifetimeUsed, cell_bytes, parse_cell
from harness.record.fold import fold
from harness.record.ledger import Event
from harness.record.position import Position

KEY = b"c" * 32
LIMITS = {"iterations": 3, "seconds": 100, "cost_usd": 1.0, "turns": 10, "passes": 20}


def _events(*rows: tuple[str, str | None, int, dict[str, Any]]) -> list[tuple[Event, Position]]:
    out = []
    run = 1
    for seq, (type, step, iteration, data) in enumerate(rows, start=1):
        run = data["run"] if type == "run.started" else run
        ts = f"2030-01-01T00:00:{seq:02d}.000Z"
        event = Event(seq, ts, type, "g1", step, iteration, data, "0" * 64, run)
        out.append((event, Position(seq, f"{seq:064x}")))
    return out


def _started(**recurring: Any) -> tuple[str, None, int, dict[str, Any]]:
    data = {
        "goal_sha256": "a" * 64,
        "owners_sha256": "b" * 64,
        "approved_by": ["o"],
        "steps": ["build", "judge"],
        "limits": LIMITS,
        "no_progress_passes": 2,
        "control_commit": "c" * 40,
    }
    return ("goal.started", None, 1, data | recurring)


BUILD = ("step.started", "build", 1, {"call_id": "x", "base": "d" * 40})
BUILT = (
    "step.finished",
    "build",
    1,
    {
        "call_id": "x",
        "exit_code": 0,
        "timed_out": False,
        "duration_s": 2.0,
        "output_tail": "",
        "cost_usd": 0.25,
        "turns": 3,
        "session": "s1",
        "reported_cost_usd": 0.25,
    },
)
FAILED_JUDGE = (
    "step.finished",
    "judge",
    1,
    {
        "call_id": "y",
        "exit_code": 1,
        "timed_out": False,
        "duration_s": 1.0,
        "output_tail": "x",
        "result": "fail",
        "failing_test": "t::a",
        "tree": "e" * 40,
    },
)
DONE = ("goal.completed", None, 2, {"commit": "f" * 40})
RUN_2 = ("run.started", None, 1, {"run": 2, "control_commit": "9" * 40, "due_at": "t"})


def test_a_one_shot_goal_keeps_every_run_field_at_its_default() -> None:
    cell = fold("g1", _events(_started(), BUILD, BUILT, FAILED_JUDGE, DONE))
    assert (cell.run, cell.run_started_at, cell.run_base, cell.run_ended) == (1, None, None, None)
    assert (cell.every_s, cell.lifetime_limit, cell.lifetime_used) == (None, None, None)


def test_run_started_starts_the_run_afresh_and_the_lifetime_goes_on() -> None:
    recurring = {"every_s": 60, "lifetime": {"cost_usd": 4.0, "runs": 5}}
    rows = [_started(**recurring), BUILD, BUILT, FAILED_JUDGE, DONE]
    ended = fold("g1", _events(*rows))
    assert (ended.status, ended.run_ended, ended.iteration) == ("completed", "completed", 2)
    assert ended.run_started_at == "2030-01-01T00:00:01.000Z"
    assert ended.next_run_due() == "2030-01-01T00:01:01.000Z"
    assert ended.lifetime_limit == LifetimeCaps(cost_usd=4.0, runs=5)
    cell = fold("g1", _events(*rows, RUN_2, BUILD, BUILT))
    assert (cell.run, cell.run_base, cell.run_ended) == (2, "9" * 40, None)
    assert cell.run_started_at == "2030-01-01T00:00:06.000Z"
    assert (cell.used.cost_usd, cell.used.turns, cell.used.iterations) == (0.25, 3, 1)
    assert cell.lifetime_used == LifetimeUsed(cost_usd=0.5, seconds=4.0, turns=6, runs=2)
    fresh = fold("g1", _events(*rows, RUN_2))
    assert (fresh.status, fresh.step, fresh.iteration, fresh.failing_test) == (
        "running",
        "build",
        1,
        None,
    )
    assert (fresh.sessions, fresh.no_progress_count, fresh.gate) == ((), 0, None)


def test_lifetime_caps_are_reached_and_runs_count_only_at_a_start() -> None:
    recurring = {"every_s": 60, "lifetime": {"cost_usd": 0.5, "runs": 2}}
    cell = fold("g1", _events(_started(**recurring), BUILD, BUILT, DONE, RUN_2, BUILD, BUILT))
    assert cell.lifetime_hits() == ["cost_usd"]
    assert cell.lifetime_hits(starting=True) == ["cost_usd", "runs"]
    assert cell.lifetime_text() == "cost_usd 0.5/0.5 over 2 runs"


@pytest.mark.parametrize(
    "change",
    [
        {"run": 0},
        {"lifetime_used": LifetimeUsed(cost_usd=-1.0)},
        {"lifetime_used": LifetimeUsed(turns="3")},  # type: ignore[arg-type]
        {"lifetime_limit": LifetimeCaps(runs=0)},
    ],
)
def test_a_cell_with_an_untrustworthy_run_record_is_refused(change: dict[str, Any]) -> None:
    cell = dataclasses.replace(Cell(goal="g1", every_s=60), **change)
    with pytest.raises(TrustFailure):
        parse_cell(cell_bytes(cell, KEY), "state.json", "g1", KEY)
