"""Live export: a run's spans sent to an OpenTelemetry collector as its steps end
(trace.md, "Live export").

Only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set
and `OTEL_SDK_DISABLED` is not `true`; the SDK is imported then and only then
(`loop/otelsdk.py`, the `otel` extra). The spans are `record/trace.py`'s, the ones
`harness trace` writes: each goal's tracer is fed the ledger as it is loaded (nothing is
sent for what was recorded before) and then every event the run appends. A collector that
is down, slow or refuses never fails or holds up a run: spans go out from a background
thread of their own, and the run waits at most `CLOSE_WAIT_S` at its end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TextIO

from harness.errors import HarnessError
from harness.record.ledger import Record
from harness.record.trace import Span, Tracer
from harness.record.visible import line

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CLOSE_WAIT_S = 2.0  # the most a run's end waits for spans still queued


class Sink(Protocol):
    def send(self, goal_id: str, spans: Sequence[Span]) -> None: ...

    def close(self, wait_s: float) -> str | None:
        """Stop, waiting at most `wait_s`; what went wrong, if anything did."""


def wanted(env: Mapping[str, str]) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def live_trace(env: Mapping[str, str], err: TextIO) -> LiveTrace | None:
    """The run's live export, or None: not asked for, or the SDK is not installed (then one
    warning line on `err`, and the run goes on without it)."""
    if not wanted(env):
        return None
    try:
        from harness.loop.otelsdk import SdkSink
    except ImportError as exc:
        err.write(
            line(
                "harness: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry "
                f"SDK is not installed ({exc.name or exc}); this run exports no spans "
                "(pip install 'goal-harness[otel]')"
            )
        )
        return None
    try:
        sink = SdkSink()
    except Exception as exc:  # the exporter's own settings refused: never worth a run
        err.write(
            line(
                f"harness: warning: the OpenTelemetry exporter could not start: {exc}; "
                "this run exports no spans"
            )
        )
        return None
    return LiveTrace(sink, err)


class LiveTrace:
    """One run's export: a `GoalTrace` per goal it advances, closed once at its end."""

    def __init__(self, sink: Sink, err: TextIO) -> None:
        self.sink, self.err = sink, err

    def goal(self, goal_id: str) -> GoalTrace:
        return GoalTrace(goal_id, lambda spans: self._send(goal_id, spans), self._warn)

    def _warn(self, text: str) -> None:
        self.err.write(line(f"harness: traces: {text}"))

    def _send(self, goal_id: str, spans: Sequence[Span]) -> None:
        try:
            self.sink.send(goal_id, spans)
        except Exception as exc:  # a trace is never worth a run: anything the SDK raises
            self._warn(f"{goal_id}: spans not sent: {exc}")

    def close(self) -> None:
        try:
            problem = self.sink.close(CLOSE_WAIT_S)
        except Exception as exc:  # as in _send
            problem = f"the exporter failed to stop: {exc}"
        if problem is not None:
            self._warn(problem)


class GoalTrace:
    """One goal's spans as the run records it. The spans an event ends wait until the
    recorder prints that event's line (`release`), and are dropped with the lines of a run
    that lost the goal to another runner (`drop`, remote.md): nothing is sent that did not
    happen."""

    def __init__(
        self, goal_id: str, send: Callable[[Sequence[Span]], None], warn: Callable[[str], None]
    ) -> None:
        self.goal_id = goal_id
        self.tracer: Tracer | None = Tracer(goal_id)
        self.send, self.warn = send, warn
        self.held: list[Span] = []

    def seed(self, record: Record) -> None:
        """A record as the goal was loaded: recorded before this run, never sent now."""
        if self.tracer is not None:
            self.tracer.skip(record)

    def add(self, record: Record) -> None:
        if self.tracer is None:
            return
        try:
            self.held.extend(self.tracer.add(record))
        except HarnessError as exc:  # a record the run itself accepted: never worth a run
            self.tracer = None
            self.warn(f"{self.goal_id}: no more spans this run: {exc}")

    def release(self) -> None:
        spans, self.held = self.held, []
        if spans:
            self.send(spans)

    def drop(self) -> None:
        self.held.clear()
