"""Which signed record crosses which gate, and budget extensions: table-driven, with the
exact messages a bad extension is refused with."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.errors import InvalidInput
from harness.record.cell import Cell, Spend
from harness.record.position import Position
from harness.trust.approvals import SignedRecord
from harness.trust.decisions import (
    bound_to,
    crosses,
    extended_limits,
    find_decision,
    parse_extension,
)
from harness.trust.owners import Owner, parse_owners
from harness.trust.sshsig import sign
from harness.trust.statement import Statement
from tests.managed import OWNER, Key, make_key

SHA = "a" * 64
COMMIT = "c" * 40
POSITION = Position(7, "d" * 64)
PARKED = Cell(
    goal="g1",
    status="parked_at_eyes",
    gate="ship",
    goal_sha256=SHA,
    gate_commit=COMMIT,
    position=POSITION,
    limit=Spend(iterations=3, seconds=7200, cost_usd=20.0, turns=300, passes=50),
)
SOURCE = "goals/g1.approval"
DURATION = "a duration like 90s, 30m or 4h, or a whole number of seconds, up to 8760h"


def _statement(**changes: str) -> Statement:
    fields = {"goal": "g1", "sha256": SHA, "decision": "ship", "commit": COMMIT}
    return Statement(**(fields | {"ledger": str(POSITION)} | changes))


def _unsigned(statement: Statement, index: int = 1) -> SignedRecord:
    return SignedRecord(statement, statement.to_bytes(), "", index)


def _signed(statement: Statement, key: Key, index: int = 1) -> SignedRecord:
    armored = sign(statement.to_bytes(), key.private)
    return SignedRecord(statement, statement.to_bytes(), armored, index)


def _owners(key: Key) -> tuple[Owner, ...]:
    return parse_owners(f"{OWNER} {key.public}\n", ".harness/owners")


@pytest.mark.parametrize(
    ("decision", "gate", "expected"),
    [
        ("ship", "ship", True),
        ("ship", "ship_outcome_unknown", True),
        ("ship", "budget_exhausted", False),
        ("extend-budget iterations=2", "budget_exhausted", True),
        ("extend-budget iterations=2", "max_passes", True),
        # Gates of how the goal tries: a budget crosses them too (issue 30, item 5).
        ("extend-budget iterations=2", "no_progress", True),
        ("extend-budget iterations=2", "agent_unavailable", True),
        # Gates of what a step did, or that only a ship or a revision crosses: never.
        ("extend-budget iterations=2", "destructive:deploy", False),
        ("extend-budget iterations=2", "tamper", False),
        ("extend-budget iterations=2", "secret_in_change", False),
        ("extend-budget iterations=2", "read_only_violation", False),
        ("extend-budget iterations=2", "ship_outcome_unknown", False),
        ("extend-budget iterations=2", "lifetime_exhausted", False),
        ("unpark no_progress", "no_progress", True),
        ("unpark destructive:deploy", "destructive:deploy", True),
        ("unpark destructive:deploy", "destructive:drop", False),
        ("unpark ship", "ship", False),  # only a ship decision ships
        ("ship", "ship_failed", True),  # a failed ship is retried by a new ship decision
        ("unpark ship_failed", "ship_failed", False),
        ("unpark tamper", None, False),
    ],
)
def test_crosses(decision: str, gate: str | None, expected: bool) -> None:
    assert crosses(decision, gate) is expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, True),
        ({"goal": "g2"}, False),
        ({"sha256": "b" * 64}, False),
        ({"commit": "e" * 40}, False),
        ({"ledger": f"6:{'d' * 64}"}, False),
        ({"ledger": f"7:{'f' * 64}"}, False),
        ({"decision": "unpark ship"}, False),
    ],
)
def test_bound_to_needs_every_field_of_the_waiting_state(
    changes: dict[str, str], expected: bool
) -> None:
    assert bound_to(_unsigned(_statement(**changes)), "g1", PARKED) is expected


def test_bound_to_nothing_when_the_goal_is_not_waiting() -> None:
    running = replace(PARKED, status="running", gate=None)
    assert bound_to(_unsigned(_statement()), "g1", running) is False


@pytest.fixture
def stranger(tmp_path: Path) -> Key:
    return make_key(tmp_path, "stranger")


def test_find_decision_takes_the_owner_signed_bound_record(owner_key: Key, stranger: Key) -> None:
    records = [
        _signed(_statement(), stranger, 1),
        _signed(_statement(decision="unpark no_progress"), owner_key, 2),
        _signed(_statement(), owner_key, 3),
        _signed(_statement(), owner_key, 4),
    ]
    verdict = find_decision(records, _owners(owner_key), "g1", PARKED, SOURCE)
    assert verdict is not None
    assert (verdict.record.index, verdict.principals) == (3, (OWNER,))


@pytest.mark.parametrize("case", ["stranger", "forged", "unbound", "none"])
def test_find_decision_finds_none(owner_key: Key, stranger: Key, case: str) -> None:
    signed = _signed(_statement(), owner_key)
    other = _signed(_statement(commit="e" * 40), owner_key)
    records = {
        "stranger": [_signed(_statement(), stranger)],
        # An owner's signature over another statement, put under this one.
        "forged": [replace(signed, armored=other.armored)],
        "unbound": [other],
        "none": [],
    }[case]
    assert find_decision(records, _owners(owner_key), "g1", PARKED, SOURCE) is None


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ("extend-budget iterations=5", {"iterations": 5}),
        ("extend-budget iterations=5,cost_usd=30", {"iterations": 5, "cost_usd": 30.0}),
        ("extend-budget max_turns=7", {"turns": 7}),
        ("extend-budget seconds=2h", {"seconds": 7200}),
        ("extend-budget seconds=90", {"seconds": 90}),
        ("extend-budget passes=60,cost_usd=0.5", {"passes": 60, "cost_usd": 0.5}),
    ],
)
def test_parse_extension(decision: str, expected: dict[str, object]) -> None:
    assert parse_extension(decision) == expected


NOT_A_KEY = "is not a budget key (expected one of iterations, seconds, cost_usd, turns, passes)"
POSITIVE = "(expected a number greater than 0)"


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        ("extend-budget bogus=3", f"--extend-budget: bogus: {NOT_A_KEY}"),
        ("extend-budget iterations=5,bogus=1", f"--extend-budget: bogus: {NOT_A_KEY}"),
        ("extend-budget =3", f"--extend-budget: {NOT_A_KEY}"),
        ("extend-budget iterations=x", f"--extend-budget: iterations: 'x' is not a number {POSITIVE}"),
        ("extend-budget iterations=1.5", f"--extend-budget: iterations: '1.5' is not a number {POSITIVE}"),
        ("extend-budget iterations", f"--extend-budget: iterations: '' is not a number {POSITIVE}"),
        ("extend-budget iterations=0", f"--extend-budget: iterations: '0' is not greater than 0 {POSITIVE}"),
        ("extend-budget cost_usd=-1", f"--extend-budget: cost_usd: '-1' is not greater than 0 {POSITIVE}"),
        ("extend-budget cost_usd=nan", f"--extend-budget: cost_usd: 'nan' is not greater than 0 {POSITIVE}"),
        ("extend-budget cost_usd=inf", f"--extend-budget: cost_usd: 'inf' is not greater than 0 {POSITIVE}"),
        ("extend-budget seconds=0", f"--extend-budget: seconds: 0 is not greater than 0 (expected {DURATION})"),
        ("extend-budget seconds=soon", f"--extend-budget: seconds: 'soon' is not a duration (expected {DURATION})"),
        ("extend-budget seconds=-5", f"--extend-budget: seconds: '-5' is not a duration (expected {DURATION})"),
    ],
)  # fmt: skip
def test_parse_extension_refuses(decision: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_extension(decision)
    assert str(caught.value) == message


def test_parse_extension_names_its_source() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_extension("extend-budget turns=0", "decision")
    assert str(caught.value) == f"decision: turns: '0' is not greater than 0 {POSITIVE}"


CURRENT = {"iterations": 3, "seconds": 7200, "cost_usd": 20.0, "turns": 300, "passes": 50}


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ("extend-budget iterations=5", CURRENT | {"iterations": 5}),
        ("extend-budget cost_usd=30,passes=80", CURRENT | {"cost_usd": 30.0, "passes": 80}),
        # A decision that does not parse changes nothing (it was signed, so it is recorded).
        ("extend-budget iterations=0", CURRENT),
        ("extend-budget bogus=1", CURRENT),
    ],
)
def test_extended_limits(decision: str, expected: dict[str, object]) -> None:
    assert extended_limits(PARKED, decision) == expected
