"""The state cell: the fold, the attested file, and its refusals."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from harness.errors import TrustFailure
from harness.record.cell import Cell, InFlight, Spend, cell_bytes, parse_cell, peek_cell
from harness.record.fold import apply, fold
from harness.record.formats import NewerFormat
from harness.record.ledger import Event
from harness.record.position import Position

KEY = b"c" * 32
LIMITS = {"iterations": 2, "seconds": 100, "cost_usd": 1.0, "turns": 10, "passes": 20}


def ev(
    seq: int, type: str, step: str | None = None, iteration: int = 0, **data: Any
) -> tuple[Event, Position]:
    return Event(seq, "t", type, "g1", step, iteration, data, "0" * 64), Position(
        seq, f"{seq:064x}"
    )


def started(seq: int = 1, steps: Sequence[str] = ("build", "judge")) -> tuple[Event, Position]:
    return ev(
        seq,
        "goal.started",
        goal_sha256="a" * 64,
        owners_sha256="b" * 64,
        approved_by=["o"],
        steps=list(steps),
        limits=LIMITS,
        no_progress_passes=2,
        control_commit="c" * 40,
    )


def round_(
    seq: int, iteration: int, passed: bool, tree: str = "t1", cost: float = 0.5
) -> list[tuple[Event, Position]]:
    return [
        ev(seq, "step.started", "build", iteration, call_id="b", base="0" * 40),
        ev(
            seq + 1,
            "step.finished",
            "build",
            iteration,
            duration_s=2.0,
            cost_usd=cost,
            turns=3,
            tree=tree,
        ),
        ev(seq + 2, "step.started", "judge", iteration, call_id="j", base="0" * 40),
        ev(
            seq + 3,
            "step.finished",
            "judge",
            iteration,
            duration_s=1.0,
            tree=tree,
            result="pass" if passed else "fail",
            failing_test=None if passed else "t::x",
            output_tail="boom",
        ),
    ]


def test_fold_counts_budget_and_schedules_repair() -> None:
    cell = fold("g1", [started(), *round_(2, 1, passed=False)])
    assert (cell.status, cell.step, cell.iteration, cell.failing_test) == (
        "running",
        "build",
        2,
        "t::x",
    )
    assert cell.used == Spend(iterations=1, seconds=2.0, cost_usd=0.5, turns=3, passes=2)
    assert cell.feedback == "boom" and cell.in_flight is None
    assert cell.exhausted() == []


def test_same_failure_and_tree_counts_as_no_progress() -> None:
    cell = fold("g1", [started(), *round_(2, 1, False), *round_(6, 2, False)])
    assert cell.no_progress_count == 2
    other = fold("g1", [started(), *round_(2, 1, False), *round_(6, 2, False, tree="t2")])
    assert other.no_progress_count == 1


def test_iterations_run_out_before_a_third_build() -> None:
    cell = fold("g1", [started(), *round_(2, 1, False), *round_(6, 2, False, tree="t2")])
    assert cell.exhausted() == ["iterations", "cost_usd"]


def test_a_started_step_is_in_flight_until_finished() -> None:
    cell = fold("g1", [started(), round_(2, 1, False)[0]])
    assert cell.in_flight == InFlight("build", 1, "b", "0" * 40)
    rerun = fold(
        "g1",
        [
            ev(3, "step.cutoff", "build", 1, call_id="b", changed=[]),
            ev(4, "step.started", "build", 1, call_id="b", base="0" * 40),
        ],
        start=cell,
    )
    assert rerun.used.iterations == 1 and rerun.used.passes == 2


def test_judge_pass_goes_to_review_when_configured() -> None:
    cell = fold("g1", [started(steps=("build", "judge", "review")), *round_(2, 1, True)])
    assert (cell.step, cell.judge_passed, cell.failing_test) == ("review", True, None)


def test_gate_and_decision() -> None:
    cell = fold(
        "g1", [started(), ev(2, "goal.gated", status="parked_at_eyes", reason="ship", detail="d")]
    )
    assert (cell.status, cell.gate) == ("parked_at_eyes", "ship")
    shipped = apply(
        cell,
        ev(3, "decision.used", decision="ship", gate="ship", signers=["o"])[0],
        Position(3, "h"),
    )
    assert (shipped.status, shipped.gate, shipped.step) == ("running", None, "ship")


def test_cell_round_trip_and_mac_binds_goal_and_content() -> None:
    cell = fold("g1", [started(), *round_(2, 1, False)])
    data = cell_bytes(cell, KEY)
    assert parse_cell(data, "s", "g1", KEY) == cell
    with pytest.raises(TrustFailure, match="belongs to goal 'g1', not 'g2'"):
        parse_cell(data, "s", "g2", KEY)
    with pytest.raises(TrustFailure, match="MAC does not match"):
        parse_cell(data.replace(b'"iteration":2', b'"iteration":1'), "s", "g1", KEY)
    with pytest.raises(TrustFailure, match="MAC does not match"):
        parse_cell(data, "s", "g1", b"d" * 32)


def _signed(raw: dict[str, Any]) -> bytes:
    body = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    tag = b"harness-cell\x00v1\x00g1\x00"
    return json.dumps(
        {**raw, "mac": hmac.new(KEY, tag + body, hashlib.sha256).hexdigest()}
    ).encode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.update(v=2), "s: written by a newer goal-harness \\(format 2\\): upgrade"),
        (lambda r: r.update(v=0), "s: unknown cell format version 0 \\(this harness reads"),
        (lambda r: r.update(v="2"), "s: unknown cell format version '2'"),
        (lambda r: r.pop("v"), "s: unknown cell format version None"),
        (
            lambda r: r.update(checkpoint_sig="x", zz=1),
            "s: holds cell field\\(s\\) this goal-harness does not know \\(checkpoint_sig, zz\\): "
            "written by a newer goal-harness \\(format 1\\): upgrade",
        ),
        (lambda r: r.pop("limit"), "malformed"),
        (
            lambda r: r["limit"].update(iterations=0),
            "limit.iterations: 0 is not a valid budget amount",
        ),
        (lambda r: r["used"].update(cost_usd=-1), "used.cost_usd: -1 is not a valid budget amount"),
        (lambda r: r["limit"].update(turns="9"), "limit.turns: '9' is not a valid budget amount"),
        (lambda r: r["limit"].update(turns=True), "limit.turns: True is not a valid budget amount"),
        (lambda r: r.update(status="bogus"), "unknown status 'bogus'"),
        (lambda r: r.update(step="deploy"), "step: unknown step 'deploy'"),
        (lambda r: r.update(steps=["build", "deploy"]), "steps: unknown step 'deploy'"),
        (
            lambda r: r.update(
                in_flight={"step": "x", "iteration": 1, "call_id": "c", "base": "b"}
            ),
            "in_flight.step: unknown step 'x'",
        ),
        (lambda r: r.update(gate="asleep"), "gate: unknown gate reason 'asleep'"),
        (lambda r: r.update(gate="destructive:"), "gate: unknown gate reason 'destructive:'"),
        (lambda r: r.update(run_ended="running"), "run_ended: 'running' is not how a run ends"),
        (lambda r: r.pop("position"), "fields are malformed \\('position'\\)"),
        (lambda r: r.update(rule_counts=[]), "rule_counts must be a mapping"),
        (lambda r: r.update(rule_counts={"config:0": {"hits": -1, "warned": 0}}), "counts"),
        (lambda r: r.update(rule_counts={"config:0": {"hits": 1}}), "malformed"),
        (
            lambda r: r.update(
                rule_counts={f"config:{n}": {"hits": 1, "warned": 0} for n in range(65)}
            ),
            "at most 64 rules",
        ),
    ],
)
def test_signed_but_malformed_cells_are_refused(
    change: Callable[[dict[str, Any]], object], message: str
) -> None:
    raw = {"v": 1, **fold("g1", [started()]).to_dict()}
    change(raw)
    with pytest.raises(TrustFailure, match=message):
        parse_cell(_signed(raw), "s", "g1", KEY)


def test_a_newer_cell_is_named_before_its_size_goal_or_mac_is_checked() -> None:
    """A newer format may allow a larger cell: its version is read first (formats.py)."""
    raw = {"v": 3, **fold("g1", [started()]).to_dict(), "notes": "x" * 70_000, "goal": "g2"}
    data = _signed(raw)
    newer = r"^s: written by a newer goal-harness \(format 3\)"
    with pytest.raises(NewerFormat, match=newer):
        parse_cell(data, "s", "g1", KEY)
    with pytest.raises(NewerFormat, match=newer):
        peek_cell(data, "s", "g1")
    raw["v"] = 1
    with pytest.raises(TrustFailure, match=r"^s: the cell is 7[0-9]{4} bytes \(limit 65536\)$"):
        parse_cell(_signed(raw), "s", "g1", KEY)


@pytest.mark.parametrize("gate", ["ship", "secret_in_change", "destructive:payments"])
def test_a_signed_cell_at_any_gate_reason_loads(gate: str) -> None:
    raw = {"v": 1, **fold("g1", [started()]).to_dict(), "status": "parked_at_eyes", "gate": gate}
    assert parse_cell(_signed(raw), "s", "g1", KEY).gate == gate


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"[]", b'{"v":1,"v":1}', b'{"v":1,"x":NaN}', b'{"v":1}', b"\xff\xfe"],
)
def test_garbage_cells_are_refused(data: bytes) -> None:
    with pytest.raises(TrustFailure):
        parse_cell(data, "s", "g1", KEY)


def test_cell_is_pending_until_started() -> None:
    assert Cell(goal="g1").status == "pending"


def test_owner_rule_counts_fold_per_check_and_round_trip() -> None:
    """A build that fired a warn rule on two files counts 1; a lesson check that failed,
    1 for its lesson; an old event without `owner_rules` is read from its hit lines."""
    events = [
        started(),
        ev(
            2,
            "step.finished",
            "build",
            1,
            duration_s=1.0,
            tree="t",
            owner_rules={"config:0": "warned"},
            warned=["a (config:0)", "b (config:0)"],
        ),
        ev(
            3,
            "step.finished",
            "build",
            2,
            duration_s=1.0,
            tree="t",
            warned=["a (config:0)"],
            destructive=["x (config:1)", "y (rm_rf)"],
        ),
        ev(4, "lesson.checked", None, 2, name="strict", passed=False, warned=True),
        ev(5, "lesson.checked", None, 2, name="kind", passed=False),
        ev(6, "lesson.checked", None, 2, name="easy", passed=True),
    ]
    cell = fold("g1", events)
    assert [tuple(c) for c in cell.rule_counts or ()] == [
        ("config:0", 0, 2),
        ("config:1", 1, 0),
        ("lesson:kind", 1, 0),
        ("lesson:strict", 0, 1),
    ]
    assert parse_cell(cell_bytes(cell, KEY), "s", "g1", KEY) == cell
    assert Cell(goal="g1").rule_counts is None  # before goal.started: none kept
    assert fold("g1", [started()]).rule_counts == ()
