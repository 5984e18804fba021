"""The record's vocabulary in one place: event types, statuses, steps and gate reasons.

Every consumer of events (the cell's fold, the text renderer, the HTML report) keeps one
table keyed by `EventType`; `tests/record/test_events.py` fails when a table misses a type.
"""

# No `from __future__ import annotations` here: TypedDict reads NotRequired[...] from its
# annotations when the class is made, and string annotations hide it (Python 3.11).
from typing import Final, Literal, NewType, NotRequired, TypedDict, TypeGuard, get_args

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
    "run.started",
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

# A gate's reason is one of these words, or a destructive gate: DESTRUCTIVE_PREFIX + a
# class of harness.model.config.DESTRUCTIVE_CLASSES or of an owner's rule.
GateWord = Literal[
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
]
GATE_WORDS: Final[tuple[GateWord, ...]] = get_args(GateWord)
DESTRUCTIVE_PREFIX: Final = "destructive:"
# `destructive:<class>`: a class cannot be listed here, so it is made by destructive_gate.
DestructiveGate = NewType("DestructiveGate", str)
GateReason = GateWord | DestructiveGate


def destructive_gate(cls: str) -> DestructiveGate:
    """The gate a destructive class parks a goal at."""
    return DestructiveGate(DESTRUCTIVE_PREFIX + cls)


# The runtime checks behind the Literals, for values read from disk (record/cell.py).
def is_status(value: object) -> TypeGuard[Status]:
    return value in STATUSES


def is_step(value: object) -> TypeGuard[StepName]:
    return value in STEP_NAMES


def is_gate_reason(value: object) -> TypeGuard[GateReason]:
    if value in GATE_WORDS:
        return True
    destructive = isinstance(value, str) and value.startswith(DESTRUCTIVE_PREFIX)
    return destructive and value != DESTRUCTIVE_PREFIX


# How a step was contained (loop/contain/sandbox.py): by bubblewrap, not at all because the
# configuration says `sandbox: off`, or not because `auto` found no working bwrap.
Containment = Literal["bwrap", "off", "unavailable"]


# ---- each event's data, as recorded ------------------------------------------------------
# NotRequired marks a key that only some events carry (or that records written before it
# was added lack). Readers take `event.data` as the type its table entry names.


class LessonRef(TypedDict):
    name: str
    sha256: str


class GoalStarted(TypedDict):
    """`goal.started` (the first approved version) and `goal.revised` (a later one)."""

    goal_sha256: str
    owners_sha256: str
    approved_by: list[str]
    steps: list[StepName]
    limits: dict[str, float]
    no_progress_passes: int
    stale_after_s: NotRequired[int]  # halt.stale_after; absent before staleness was kept
    control_commit: str
    command_classes: NotRequired[list[str]]
    command_detail: NotRequired[str | None]
    command_warned: NotRequired[list[str]]  # hits of `enforce: warn` config rules
    owner_rules: NotRequired[dict[str, Literal["hit", "warned"]]]  # config rules that fired
    sandbox: NotRequired[Containment]
    objective: NotRequired[str | None]  # the objective's text, for the reports
    # `goal.revised` only: the new version gets a fresh try (loop.md, "A revision"): the
    # no-progress evidence starts again and a repair round re-runs the judge first. Absent
    # in records written before it, whose revisions fold as they always did.
    fresh_try: NotRequired[bool]
    # A recurring goal (`every:`): its interval in seconds and its lifetime caps (`cost_usd`,
    # `seconds`, `turns`, `runs`; a cap not named is absent); both absent for a one-shot goal.
    every_s: NotRequired[int]
    lifetime: NotRequired[dict[str, float]]


class StepStarted(TypedDict):
    call_id: str
    base: str
    runner: NotRequired[str]
    lease_until: NotRequired[str]
    lessons: NotRequired[list[LessonRef]]
    sandbox: NotRequired[Containment]
    # Only a step that does not share the runner's network: none at all (`off`), or only
    # the hosts of its allowlist, through the harness's proxy (`allowlist`).
    network: NotRequired[Literal["off", "allowlist"]]


class LessonChecked(TypedDict):
    name: str
    sha256: str
    exit_code: int
    passed: bool
    output_tail: str | None
    warned: NotRequired[bool]  # failed, and the lesson's check says enforce: warn


class StepInterrupted(TypedDict):
    call_id: str
    signal: str


class StepCutoff(TypedDict):
    call_id: str
    changed: list[str]


EgressVerdict = Literal["allowed", "denied"]


class EgressEntry(TypedDict):
    """One destination a step with an allowlist tried, and the proxy's verdict: how often,
    the bytes each way (`sent` from the step), how many allowed tries could not connect
    (`failed`), why it was denied (`why`). `host` is as the step named it, at most 100
    characters (cut from the front), or `(unreadable request)`; it is agent data."""

    host: str
    port: int
    verdict: EgressVerdict
    count: int
    sent: int
    received: int
    failed: NotRequired[int]
    why: NotRequired[str]


class JUnitCounts(TypedDict):
    """A judge's JUnit file, counted: test cases, and those that failed, erred, were skipped."""

    tests: int
    failures: int
    errors: int
    skipped: int


StepResultWord = Literal[
    "pass", "fail", "tamper", "violation", "unavailable", "secret", "unrunnable"
]


class StepFinished(TypedDict):
    """Every step's result; a build adds its spend and change, a judge its failing test."""

    call_id: str
    exit_code: int | None  # None: killed by its timeout or a signal
    signal: NotRequired[str]  # the signal that ended it, when not its timeout (`SIGKILL`)
    timed_out: bool
    duration_s: float
    output_tail: str | None
    result: NotRequired[StepResultWord]
    tree: NotRequired[str]
    changed: NotRequired[list[str]]
    touched: NotRequired[list[str]]
    # build
    cost_usd: NotRequired[float]
    turns: NotRequired[int]
    session: NotRequired[str]
    reported_cost_usd: NotRequired[float | None]
    reported_turns: NotRequired[int | None]
    reported_tokens: NotRequired[list[int]]  # the session's token totals (codex)
    # This build's own tokens as counted: [input (cached included), cached input, output];
    # absent when its agent reported none, and in records written before they were kept.
    tokens: NotRequired[list[int]]
    spend_evidence: NotRequired[str]  # how the spend was told apart (docs/specs/agents.md)
    # The agent CLI's version as it reported it (aider's first line, claude's init event or
    # transcript, codex's rollout); absent when it said none, and in older records.
    agent_version: NotRequired[str]
    summary: NotRequired[str | None]
    agent_error: NotRequired[str | None]
    destructive_classes: NotRequired[list[str]]
    destructive_detail: NotRequired[str | None]
    destructive: NotRequired[list[str | None]]
    warned: NotRequired[list[str]]  # hits of `enforce: warn` config rules: not a gate
    owner_rules: NotRequired[dict[str, Literal["hit", "warned"]]]  # config rules that fired
    diff: NotRequired[str]  # the change without ledger/, bounded (record/evidence.py)
    # build, result "secret": `path:line receipt` of each secret in the change; those files
    # were held back (loop/quarantine.py), the rest of the change recorded as usual
    secrets: NotRequired[list[str]]
    # build, result "unavailable": the model API failed (the tool's own message); this was
    # try `unavailable_try` of `unavailable_tries` in a row, the next is due at `retry_at`
    # (absent on the last try: the goal stops at agent_unavailable)
    unavailable: NotRequired[str]
    unavailable_try: NotRequired[int]
    unavailable_tries: NotRequired[int]
    retry_at: NotRequired[str]
    # build, result "unrunnable": its command exited 127 or 126 (not found, not runnable);
    # the agent_unavailable gate's detail, naming the program (absent in older records)
    unrunnable: NotRequired[str]
    # a step whose goal names an allowlist (loop/contain/proxy.py): each destination it tried,
    # the first 40; the tries past those counted per verdict; or why the proxy's record was
    # lost (the list is then empty). Absent for every other step, and in older records.
    egress: NotRequired[list[EgressEntry]]
    egress_more: NotRequired[dict[EgressVerdict, int]]
    egress_error: NotRequired[str]
    # judge, review, plan
    failing_test: NotRequired[str | None]
    stdout_tail: NotRequired[str | None]
    # judge with `junit:`: the counts its JUnit file gave (absent in older records, and
    # where the file was missing or unreadable)
    junit: NotRequired[JUnitCounts]
    # ship: the SHA-256 of the bundle it got as HARNESS_ATTESTATION, or why it got none
    # (docs/specs/attest.md; absent in older records)
    attestation: NotRequired[str]
    attestation_missing: NotRequired[str]


class DoneBlocked(TypedDict):
    missing: list[str]
    tree: str
    detail: str | None
    lessons_failed: NotRequired[list[str]]
    expect_short: NotRequired[list[str]]  # `expect.globs` out of bounds, one line each


class GoalGated(TypedDict):
    status: Status
    reason: str  # a GateReason, or DESTRUCTIVE_PREFIX + a class
    detail: str | None
    commit: str
    change: NotRequired[str]  # the ship gate's whole change, bounded (loop/reviewdiff.py)


class OwnersRotated(TypedDict):
    owners_sha256: str
    owners_commit: str
    signers: list[str]


class DecisionUsed(TypedDict):
    decision: str
    gate: str | None
    signers: list[str]
    commit: str | None
    ledger: str | None
    signature_sha256: str
    limits: NotRequired[dict[str, float]]
    # unpark secret_in_change: the held-back files put back, and those this clone lacks
    restored: NotRequired[list[str]]
    missing: NotRequired[list[str]]


class GoalCompleted(TypedDict):
    commit: str
    detail: NotRequired[str]


class GoalCancelled(TypedDict):
    by: str


class GoalResumed(TypedDict):
    runner: str


class GoalFailed(TypedDict):
    detail: str
    reason: NotRequired[Literal["budget_exhausted"]]  # a recurring goal's run ran out


class RunStarted(TypedDict):
    """A recurring goal's run N ≥ 2 (run 1 is begun by `goal.started`)."""

    run: int
    control_commit: str  # the control branch's head the run starts from
    # The anchored time the run stands for: the previous run's `due_at` (the first run's
    # start) plus `every`, or the last such time reached when runs were missed; in records
    # from before anchoring, the previous run's start plus `every` (record/schedule.py).
    due_at: str


# The data type of each event type: what a reader of `event.data` may rely on.
EVENT_DATA: Final[dict[EventType, type]] = {
    "goal.started": GoalStarted,
    "goal.revised": GoalStarted,
    "step.started": StepStarted,
    "lesson.checked": LessonChecked,
    "step.interrupted": StepInterrupted,
    "step.cutoff": StepCutoff,
    "step.finished": StepFinished,
    "done.blocked": DoneBlocked,
    "goal.gated": GoalGated,
    "owners.rotated": OwnersRotated,
    "decision.used": DecisionUsed,
    "goal.completed": GoalCompleted,
    "goal.cancelled": GoalCancelled,
    "goal.resumed": GoalResumed,
    "goal.failed": GoalFailed,
    "run.started": RunStarted,
}
