"""A goal's record as OpenTelemetry spans: a trace per run, a span per step (trace.md).

One mapping, two sinks: `harness trace` writes these spans as OTLP/JSON (`record/otlp.py`)
and `harness run` sends the same spans to a collector as its steps end (`loop/otel.py`).
They are made from the ledger alone. A run's trace id is the first 32 hex digits of the
SHA-256 of the ledger line that opened the run (the ledger's first line, or the run's
`run.started`); a step's span id is the first 16 of its `step.started` line's: the trace
names the lines it was made from, so it cannot disagree with the record, and rendering
it twice gives the same bytes.

A span runs from its `step.started` to its `step.finished`. A step attempt that never
finished (its process was killed) ends at the next event recorded after it, as cut off;
one still open where the ledger ends has no span yet. The events outside steps (a gate, a
decision, a resume, a revision, the lessons' checks) become span events of the next step's
span: what led to that step. The events after a run's last step belong to no span.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from harness import __version__
from harness.record.ledger import RUN_STARTED, LedgerBroken, Record
from harness.record.traceattrs import (
    Attributes,
    Pairs,
    agent_pairs,
    attributes,
    count,
    event_pairs,
    failure,
    finished_pairs,
    started_pairs,
    text,
)

SERVICE = "goal-harness"  # service.name, and the instrumentation scope's name
MAX_SPAN_EVENTS = 32  # the latest are kept; the span says how many were dropped
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class SpanEvent:
    name: str  # the event type
    time_ns: int
    attributes: Attributes


@dataclass(frozen=True)
class Span:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    name: str
    run: int
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: tuple[SpanEvent, ...]
    dropped_events: int
    error: str | None  # the status message of a step that failed; None: status unset


def resource_attributes(goal_id: str) -> Attributes:
    return (
        ("service.name", SERVICE),
        ("service.version", __version__),
        ("harness.goal.id", goal_id),
    )


def spans(records: Iterable[Record], goal_id: str, run: int | None = None) -> Iterator[Span]:
    """Every finished step's span, in ledger order; with `run`, that run's only."""
    tracer = Tracer(goal_id)
    for record in records:
        for span in tracer.add(record):
            if run is None or span.run == run:
                yield span


def nanos(record: Record) -> int:
    """The event's time in nanoseconds since the epoch; a time the harness never writes
    (only possible in a record read without the secret) is a broken record."""
    ts = record.event.ts
    try:
        moment = datetime.fromisoformat(ts) if isinstance(ts, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise LedgerBroken(
            f"ledger/{record.event.goal}/events/{record.segment}",
            record.line,
            f"ts: {text(ts) if isinstance(ts, str) else ts!r} is not a time the harness "
            "writes (expected an ISO 8601 time with its zone, e.g. 2030-01-01T02:00:00.000Z)",
            record.event.seq,
        )
    return (moment - _EPOCH) // _MICROSECOND * 1_000


def _call_id(record: Record) -> Any:
    data = record.event.data
    return data.get("call_id") if isinstance(data, dict) else None


_STEP_ENDS = ("step.finished", "step.interrupted")


@dataclass(frozen=True)
class _Attempt:
    """A step that has started: its `step.started` and the records that led to it."""

    started: Record
    trace_id: str
    before: tuple[Record, ...]
    dropped: int
    gate: str | None


class Tracer:
    """Feed every record in ledger order: `add` returns the spans a record ends; `skip`
    moves on past a record without making any (a ledger loaded to go on from, whose spans
    were made when it was written: it costs a few comparisons a record)."""

    def __init__(self, goal_id: str) -> None:
        self.goal_id = goal_id
        self.trace_id: str | None = None
        # What happened since the last step started, as records: made into span events
        # only for a span that is made.
        self.waiting: deque[Record] = deque(maxlen=MAX_SPAN_EVENTS)
        self.dropped = 0
        self.gate: str | None = None  # the last gate among the waiting records
        self.open: _Attempt | None = None

    def add(self, record: Record) -> list[Span]:
        return self._take(record, True)

    def skip(self, record: Record) -> None:
        self._take(record, False)

    def _take(self, record: Record, make: bool) -> list[Span]:
        event = record.event
        ended: list[Span] = []
        attempt = self.open
        ends_open = (
            attempt is not None
            and event.type in _STEP_ENDS
            and _call_id(record) == _call_id(attempt.started)
        )
        if attempt is not None and not ends_open:
            self.open = None
            if make:
                ended.append(self._cut_off(attempt, record))
        if self.trace_id is None or event.type == RUN_STARTED:
            self._new_run(record)
        if event.type == "step.started":
            self._start(record)
        elif attempt is not None and ends_open:
            self.open = None
            if make:
                ended.append(self._finish(attempt, record))
        else:
            self._wait(record)
        return ended

    def _new_run(self, record: Record) -> None:
        self.trace_id = record.hash[:32]
        self.waiting.clear()
        self.dropped, self.gate = 0, None

    def _wait(self, record: Record) -> None:
        if len(self.waiting) == MAX_SPAN_EVENTS:
            self.dropped += 1
        self.waiting.append(record)
        data = record.event.data
        if record.event.type == "goal.gated" and isinstance(data, dict):
            self.gate = text(data.get("reason"))

    def _start(self, record: Record) -> None:
        assert self.trace_id is not None
        self.open = _Attempt(record, self.trace_id, tuple(self.waiting), self.dropped, self.gate)
        self.waiting.clear()
        self.dropped, self.gate = 0, None

    def _finish(self, attempt: _Attempt, end: Record) -> Span:
        data = end.event.data if isinstance(end.event.data, dict) else {}
        if end.event.type == "step.interrupted":
            signal = text(data.get("signal")) or "a signal"
            return self._span(attempt, end, [], ("interrupted", f"interrupted by {signal}"), end)
        build = attempt.started.event.step == "build"
        pairs = [*finished_pairs(data), *(agent_pairs(self.goal_id, data) if build else [])]
        return self._span(attempt, end, pairs, failure(data))

    def _cut_off(self, attempt: _Attempt, end: Record) -> Span:
        return self._span(attempt, end, [], ("cut_off", f"cut off: {end.event.type} came next"))

    def _span(
        self,
        attempt: _Attempt,
        end: Record,
        pairs: Pairs,
        failed: tuple[str, str] | None,
        own_event: Record | None = None,
    ) -> Span:
        """The span of `attempt`, ended by `end`; `failed`: its `error.type` and status
        message, None when it did not fail."""
        started = attempt.started
        event = started.event
        data = event.data if isinstance(event.data, dict) else {}
        start_ns = nanos(started)
        before = attempt.before + ((own_event,) if own_event is not None else ())
        kept = before[-MAX_SPAN_EVENTS:]
        step = text(event.step) or "step"
        return Span(
            trace_id=attempt.trace_id,
            span_id=started.hash[:16],
            name=f"invoke_agent {self.goal_id}" if step == "build" else step,
            run=event.run,
            start_ns=start_ns,
            end_ns=max(start_ns, nanos(end)),
            attributes=attributes(
                [
                    ("harness.step", step),
                    ("harness.iteration", count(event.iteration)),
                    ("harness.run", event.run),
                    ("harness.ledger.started_seq", event.seq),
                    ("harness.ledger.ended_seq", end.event.seq),
                    ("harness.gate", attempt.gate),
                    *started_pairs(data),
                    *pairs,
                    ("error.type", failed[0] if failed is not None else None),
                ]
            ),
            events=tuple(span_event(record) for record in kept),
            dropped_events=attempt.dropped + len(before) - len(kept),
            error=failed[1] if failed is not None else None,
        )


def span_event(record: Record) -> SpanEvent:
    event = record.event
    pairs = [
        ("harness.ledger.seq", event.seq),
        ("harness.iteration", count(event.iteration)),
        ("harness.step", text(event.step)),
        *event_pairs(event.type, event.data),
    ]
    return SpanEvent(text(event.type) or "event", nanos(record), attributes(pairs))
