"""The attributes of a trace's spans and span events, taken from the recorded events.

Every value comes from a ledger line, and a ledger read without the secret is only
chain-checked: each value is taken only when it has the type the event declares
(`record/events.py`), else left out, so a forged line can make an attribute absent but
never a crash. Text is the sanitiser's (`visible.one_line`) and bounded; what an agent
wrote at length (output tails, summaries, diffs, error text, spend evidence, gate
details) is never taken. The names are documented in docs/specs/trace.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.record.events import EventType
from harness.record.visible import one_line

# What an attribute may hold: OTLP's string, bool, int, double, or an array of strings.
Value = str | bool | int | float | tuple[str, ...]
Attributes = tuple[tuple[str, Value], ...]
Pairs = Iterable[tuple[str, Value | None]]

MAX_TEXT = 1_000  # characters of one text value, after sanitising
MAX_ITEMS = 64  # values of one list


def text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    shown = one_line(value)
    return shown if len(shown) <= MAX_TEXT else shown[: MAX_TEXT - 1] + "…"


def count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def names(value: Any) -> tuple[str, ...] | None:
    """A list of strings, each sanitised; None for anything else or an empty list."""
    if not isinstance(value, list):
        return None
    shown = tuple(t for t in (text(item) for item in value[:MAX_ITEMS]) if t is not None)
    return shown or None


def size(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def attributes(pairs: Pairs) -> Attributes:
    """The pairs whose value is present, in order."""
    return tuple((key, value) for key, value in pairs if value is not None)


# ---- span events: one per event outside a step, keyed by event type --------------------


def _goal_version(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.goal.sha256", text(data.get("goal_sha256"))),
        ("harness.control_commit", text(data.get("control_commit"))),
        ("harness.approved_by", names(data.get("approved_by"))),
        ("harness.steps", names(data.get("steps"))),
        ("harness.every_s", count(data.get("every_s"))),
        ("harness.fresh_try", flag(data.get("fresh_try"))),
    ]


def _call(data: Mapping[str, Any]) -> Pairs:
    return [("harness.call_id", text(data.get("call_id")))]


def _lesson(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.lesson.name", text(data.get("name"))),
        ("harness.lesson.passed", flag(data.get("passed"))),
        ("harness.lesson.exit_code", count(data.get("exit_code"))),
        ("harness.lesson.warned", flag(data.get("warned"))),
    ]


def _interrupted(data: Mapping[str, Any]) -> Pairs:
    return [*_call(data), ("harness.signal", text(data.get("signal")))]


def _cutoff(data: Mapping[str, Any]) -> Pairs:
    return [*_call(data), ("harness.changed_files", size(data.get("changed")))]


def _finished(data: Mapping[str, Any]) -> Pairs:
    return [*_call(data), ("harness.step.result", text(data.get("result")))]


def _blocked(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.missing", names(data.get("missing"))),
        ("harness.lessons_failed", names(data.get("lessons_failed"))),
    ]


def _gated(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.status", text(data.get("status"))),
        ("harness.gate", text(data.get("reason"))),
        ("harness.commit", text(data.get("commit"))),
    ]


def _rotated(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.owners.sha256", text(data.get("owners_sha256"))),
        ("harness.signers", names(data.get("signers"))),
    ]


def _decision(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.decision", text(data.get("decision"))),
        ("harness.gate", text(data.get("gate"))),
        ("harness.signers", names(data.get("signers"))),
        ("harness.commit", text(data.get("commit"))),
    ]


def _completed(data: Mapping[str, Any]) -> Pairs:
    return [("harness.commit", text(data.get("commit")))]


def _cancelled(data: Mapping[str, Any]) -> Pairs:
    return [("harness.cancelled_by", text(data.get("by")))]


def _resumed(data: Mapping[str, Any]) -> Pairs:
    return [("harness.runner", text(data.get("runner")))]


def _failed(data: Mapping[str, Any]) -> Pairs:
    return [("harness.reason", text(data.get("reason")))]


def _run_started(data: Mapping[str, Any]) -> Pairs:
    return [
        ("harness.run", count(data.get("run"))),
        ("harness.control_commit", text(data.get("control_commit"))),
        ("harness.due_at", text(data.get("due_at"))),
    ]


# `step.started` and `step.finished` make spans; they are here for a finish with no start
# to match (a forged line in a record read without the secret), which waits as an event.
EVENT_ATTRIBUTES: dict[EventType, Callable[[Mapping[str, Any]], Pairs]] = {
    "goal.started": _goal_version,
    "goal.revised": _goal_version,
    "step.started": _call,
    "lesson.checked": _lesson,
    "step.interrupted": _interrupted,
    "step.cutoff": _cutoff,
    "step.finished": _finished,
    "done.blocked": _blocked,
    "goal.gated": _gated,
    "owners.rotated": _rotated,
    "decision.used": _decision,
    "goal.completed": _completed,
    "goal.cancelled": _cancelled,
    "goal.resumed": _resumed,
    "goal.failed": _failed,
    "run.started": _run_started,
}


def event_pairs(event_type: str, data: Any) -> Pairs:
    """The type's own attributes of an event's data (none for data that is not a mapping)."""
    describe = EVENT_ATTRIBUTES.get(event_type)  # type: ignore[call-overload]
    if describe is None or not isinstance(data, dict):
        return []
    return describe(data)  # type: ignore[no-any-return]


# ---- step spans ----------------------------------------------------------------------------


def started_pairs(data: Mapping[str, Any]) -> Pairs:
    """What a step's `step.started` says: its commit, containment and lessons."""
    lessons = data.get("lessons")
    given = [item.get("name") for item in lessons if isinstance(item, dict)] if lessons else []
    return [
        ("harness.call_id", text(data.get("call_id"))),
        ("harness.base", text(data.get("base"))),
        ("harness.sandbox", text(data.get("sandbox"))),
        ("harness.network", text(data.get("network"))),
        ("harness.lessons", names(given) if isinstance(lessons, list) else None),
    ]


def finished_pairs(data: Mapping[str, Any]) -> Pairs:
    """What a step's `step.finished` says, but what an agent wrote at length."""
    return [
        ("harness.step.result", text(data.get("result"))),
        ("harness.step.exit_code", count(data.get("exit_code"))),
        ("harness.step.timed_out", flag(data.get("timed_out"))),
        ("harness.step.signal", text(data.get("signal"))),
        ("harness.step.duration_s", number(data.get("duration_s"))),
        ("harness.tree", text(data.get("tree"))),
        ("harness.changed_files", size(data.get("changed"))),
        ("harness.failing_test", text(data.get("failing_test"))),
        ("harness.destructive_classes", names(data.get("destructive_classes"))),
        ("harness.cost_usd", number(data.get("cost_usd"))),
        ("harness.turns", count(data.get("turns"))),
    ]


def agent_pairs(goal_id: str, data: Mapping[str, Any]) -> Pairs:
    """The GenAI semantic conventions' attributes of a build: the agent invoked, its
    session and the tokens the record holds for this build (`tokens`: input with cached
    input included, cached input, output; absent in records written before it was kept
    and for agents that report no tokens)."""
    tokens = data.get("tokens")
    three = (
        [count(t) for t in tokens]
        if isinstance(tokens, list) and len(tokens) == 3
        else [None, None, None]
    )
    return [
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", goal_id),
        ("gen_ai.conversation.id", text(data.get("session"))),
        ("gen_ai.usage.input_tokens", three[0]),
        ("gen_ai.usage.cache_read.input_tokens", three[1]),
        ("gen_ai.usage.output_tokens", three[2]),
    ]


ERROR_RESULTS = frozenset({"fail", "tamper", "violation", "unavailable", "secret", "unrunnable"})


def failure(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """How a finished step failed, as (`error.type`, status message); None when it did not."""
    result = text(data.get("result"))
    if result in ERROR_RESULTS:
        return result, f"result {result}"
    if data.get("timed_out") is True:
        return "timeout", "timed out"
    signal = text(data.get("signal"))
    if signal is not None:
        return "signal", f"ended by {signal}"
    code = count(data.get("exit_code"))
    if code is not None and code != 0:
        return "exit_code", f"exited {code}"
    return None
