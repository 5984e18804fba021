"""The record's vocabulary: every consumer table covers every event type, and records match
the declared data types."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.record.events import EVENT_DATA, EVENT_TYPES, GATE_WORDS, STATUSES, EventType
from harness.record.fold import FOLD
from harness.record.render import DESCRIBE
from harness.record.report.collect import HANDLERS
from harness.record.traceattrs import EVENT_ATTRIBUTES
from tests.eventdata import ledger_problems, problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "table",
    [FOLD, DESCRIBE, HANDLERS, EVENT_DATA, EVENT_ATTRIBUTES],
    ids=["fold", "describe", "html", "data", "trace"],
)
def test_every_consumer_table_covers_every_event_type(table: Mapping[EventType, object]) -> None:
    assert sorted(table) == sorted(EVENT_TYPES)


def test_every_event_type_has_a_data_type() -> None:
    assert set(EVENT_DATA) == set(EVENT_TYPES)
    assert len(EVENT_TYPES) == len(set(EVENT_TYPES))


def test_statuses_and_gates_are_the_contracts() -> None:
    assert STATUSES == (
        "pending",
        "running",
        "paused",
        "parked_at_eyes",
        "completed",
        "needs_attention",
        "failed",
        "cancelled",
    )
    assert set(GATE_WORDS) == {
        "ship",
        "ship_outcome_unknown",
        "ship_failed",
        "budget_exhausted",
        "no_progress",
        "max_passes",
        "goal_changed",
        "owners_changed",
        "tamper",
        "read_only_violation",
        "agent_unavailable",
        "lifetime_exhausted",
        "secret_in_change",
        "egress_denied",
    }


def test_the_committed_example_run_matches_the_declared_data() -> None:
    """Records outlive versions: the example run, made by an earlier release, still fits."""
    assert ledger_problems(ROOT / "ledger") == []


@pytest.mark.parametrize(
    ("event_type", "data", "expected"),
    [
        ("goal.cancelled", {"by": "alice"}, []),
        ("goal.cancelled", {}, ["goal.cancelled: missing 'by'"]),
        ("goal.cancelled", {"by": "a", "x": 1}, ["goal.cancelled: undeclared 'x'"]),
        ("goal.cancelled", {"by": 3}, ["goal.cancelled.by: 3 is not"]),
        ("goal.failed", [], ["goal.failed: data is list, not a mapping"]),
        ("goal.exploded", {}, ["goal.exploded: not an event type"]),
        (
            "goal.gated",
            {"status": "asleep", "reason": "ship", "detail": None, "commit": "c"},
            ["goal.gated.status: 'asleep' is not"],
        ),
        (
            "step.cutoff",
            {"call_id": "c", "changed": ["a", 2]},
            ["step.cutoff.changed: ['a', 2] is not"],
        ),
        ("step.interrupted", {"call_id": "c", "signal": "SIGTERM"}, []),
        ("goal.completed", {"commit": "c", "detail": "shipped"}, []),
        (
            "step.started",
            {"call_id": "c", "base": "b", "lessons": [{"name": "n"}]},
            ["step.started.lessons: [{'name': 'n'}] is not"],
        ),
        (
            "decision.used",
            {
                "decision": "ship",
                "gate": "ship",
                "signers": ["a"],
                "commit": None,
                "ledger": None,
                "signature_sha256": "s",
                "limits": {"cost_usd": True},
            },
            ["decision.used.limits: {'cost_usd': True} is not"],
        ),
    ],
)
def test_data_that_does_not_match_is_named(
    event_type: str, data: object, expected: list[str]
) -> None:
    found = problems(event_type, data)
    assert len(found) == len(expected), found
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), (line, start)
