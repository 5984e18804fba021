"""The record's vocabulary in one place: event types, statuses, steps and gate reasons.

Every consumer of events (the cell's fold, the text renderer, the HTML report) keeps one
table keyed by `EventType`; `tests/record/test_events.py` fails when a table misses a type.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

EventType = Literal[
    "goal.started",
    "goal.revised",
    "step.started",
    "lesson.checked",
    "step.interrupted",
    "step.cutoff",
    "step.finished",
    "done.blocked",
    "goal.gated",
    "owners.rotated",
    "decision.used",
    "goal.completed",
    "goal.cancelled",
    "goal.resumed",
    "goal.failed",
]
EVENT_TYPES: Final[tuple[EventType, ...]] = get_args(EventType)

Status = Literal[
    "pending",
    "running",
    "paused",
    "parked_at_eyes",
    "completed",
    "needs_attention",
    "failed",
    "cancelled",
]
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
TERMINAL: Final[frozenset[Status]] = frozenset({"completed", "failed", "cancelled"})
WAITING: Final[frozenset[Status]] = frozenset({"parked_at_eyes", "needs_attention"})

StepName = Literal["plan", "build", "judge", "review", "ship"]
STEP_NAMES: Final[tuple[StepName, ...]] = get_args(StepName)
READ_ONLY_STEPS: Final[frozenset[StepName]] = frozenset({"plan", "judge", "review"})
AGENT_STEPS: Final[frozenset[StepName]] = frozenset({"build"})

# A gate's reason is one of these, or `destructive:<class>` (DESTRUCTIVE_PREFIX + a class
# of harness.model.config.DESTRUCTIVE_CLASSES or of an owner's rule).
GateReason = Literal[
    "ship",
    "ship_outcome_unknown",
    "budget_exhausted",
    "no_progress",
    "max_passes",
    "goal_changed",
    "owners_changed",
    "tamper",
    "read_only_violation",
]
GATE_REASONS: Final[tuple[GateReason, ...]] = get_args(GateReason)
DESTRUCTIVE_PREFIX: Final = "destructive:"
