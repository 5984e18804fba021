"""Signed human decisions that move a waiting goal on: which record crosses which gate.

A decision names the goal file's SHA-256, the commit the gate was reached at and the
ledger head (`seq:hash`). Only a decision naming the goal's exact current state crosses
its gate, so a decision is used at most once (its use moves the ledger head) and one made
for an earlier state is never honoured later.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.errors import InvalidInput, TrustFailure, invalid
from harness.model.limits import parse_duration
from harness.record.cell import Cell
from harness.trust.approvals import SignedRecord, Verdict, verify_record
from harness.trust.owners import Owner

SHIP_GATES = frozenset({"ship", "ship_outcome_unknown", "ship_failed"})
# Gates only a ship decision crosses (`unpark` refuses them): at ship_failed the owner
# either ships again or cancels; ship_outcome_unknown takes either (unpark: it did ship).
SHIP_ONLY_GATES = frozenset({"ship", "ship_failed"})
# Crossed only by a newly approved goal version (a higher lifetime cap): no decision.
REVISION_ONLY_GATES = frozenset({"lifetime_exhausted"})
# Gates a spent budget stops at: only a decision with more budget crosses them.
BUDGET_GATES = frozenset({"budget_exhausted", "max_passes"})
# Gates that stop a goal for how it tries, not for what it did: `extend-budget` crosses
# them as `unpark <gate>` would, with new limits (so one signature lets the goal go on when
# its budget is spent too). A gate about what a step did (destructive, tamper, a secret, a
# violation) is crossed only by a decision that names it.
EXTENDABLE_GATES = BUDGET_GATES | {"no_progress", "agent_unavailable"}
BUDGET_KEYS = {"iterations": int, "seconds": int, "cost_usd": float, "turns": int, "passes": int}


def crosses(decision: str, gate: str | None) -> bool:
    """Whether a decision of this form is the one the gate waits for."""
    if gate is None:
        return False
    if decision == "ship":
        return gate in SHIP_GATES
    if decision.startswith("extend-budget "):
        return gate in EXTENDABLE_GATES
    return decision == f"unpark {gate}" and gate not in SHIP_ONLY_GATES | REVISION_ONLY_GATES


def bound_to(record: SignedRecord, goal_id: str, cell: Cell) -> bool:
    statement = record.statement
    return (
        statement.goal == goal_id
        and statement.sha256 == cell.goal_sha256
        and statement.commit == cell.gate_commit
        and statement.ledger == str(cell.position)
        and crosses(statement.decision, cell.gate)
    )


def find_decision(
    records: Sequence[SignedRecord], owners: Sequence[Owner], goal_id: str, cell: Cell, source: str
) -> Verdict | None:
    """The first owner-signed record bound to the cell's exact waiting state, if any."""
    for record in records:
        if not bound_to(record, goal_id, cell):
            continue
        try:
            return verify_record(record, owners, source)
        except TrustFailure:
            continue  # a forged or non-owner record never crosses a gate
    return None


def parse_extension(decision: str, source: str = "--extend-budget") -> dict[str, Any]:
    """`extend-budget iterations=5,cost_usd=30` → new limits; each must be > 0."""
    items = decision.removeprefix("extend-budget ").split(",")
    limits: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        key = key.removeprefix("max_")
        if key not in BUDGET_KEYS:
            expected = ", ".join(BUDGET_KEYS)
            raise invalid(source, key, "is not a budget key", f"one of {expected}")
        limits[key] = _limit_value(key, value, source)
    return limits


def _limit_value(key: str, value: str, source: str) -> int | float:
    if key == "seconds":
        return parse_duration(int(value) if value.isdigit() else value, source, key)
    try:
        number: int | float = int(value) if BUDGET_KEYS[key] is int else float(value)
    except ValueError:
        raise invalid(
            source, key, f"{value!r} is not a number", "a number greater than 0"
        ) from None
    if not math.isfinite(number) or number <= 0:
        raise invalid(source, key, f"{value!r} is not greater than 0", "a number greater than 0")
    return number


def extended_limits(cell: Cell, decision: str) -> dict[str, Any]:
    limit = cell.limit
    current = {key: getattr(limit, key) for key in BUDGET_KEYS}
    try:
        return current | parse_extension(decision, "decision")
    except InvalidInput:
        return current
