"""The spans of `record/trace.py` handed to the official OpenTelemetry SDK and its OTLP/HTTP
exporter (the `otel` extra; imported only by `loop/otel.py`, only when export is asked for).

The exporter is configured as the SDK documents, from the environment
(`OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, `_HEADERS`, `_TIMEOUT`, `_COMPRESSION`,
certificates). The SDK's log lines are silenced: the run says what went wrong in one line
when it ends.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from harness import __version__
from harness.record.trace import SERVICE, Span, resource_attributes

# The exporter logs each failed attempt (with a traceback for some); with no handler Python
# would print them on stderr, between the run's event lines.
for _name in ("opentelemetry", "urllib3"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
    logging.getLogger(_name).propagate = False


class _Recorded(ReadableSpan):
    """A finished span as recorded, with the events `record/trace.py` dropped counted."""

    def __init__(self, span: Span, resource: Resource, scope: InstrumentationScope) -> None:
        context = SpanContext(
            int(span.trace_id, 16),
            int(span.span_id, 16),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        status = (
            Status(StatusCode.ERROR, span.error)
            if span.error is not None
            else Status(StatusCode.UNSET)
        )
        super().__init__(
            name=span.name,
            context=context,
            resource=resource,
            attributes=dict(span.attributes),
            events=[Event(e.name, dict(e.attributes), e.time_ns) for e in span.events],
            kind=SpanKind.INTERNAL,
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=scope,
        )
        self._dropped = span.dropped_events

    @property
    def dropped_events(self) -> int:
        return self._dropped


class SdkSink:
    """Spans handed to the OTLP/HTTP exporter on a thread of their own, a batch per step
    as it ends; the run's thread only queues them."""

    def __init__(self) -> None:
        self.exporter = OTLPSpanExporter()
        self.scope = InstrumentationScope(SERVICE, __version__)
        self.queue: queue.SimpleQueue[list[ReadableSpan] | None] = queue.SimpleQueue()
        self.submitted = self.delivered = 0
        # A daemon: a collector that hangs holds up no exit (the run waits only in close).
        self.thread = threading.Thread(target=self._work, name="harness-otlp", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while (batch := self.queue.get()) is not None:
            try:
                result = self.exporter.export(batch)
            except Exception:  # a collector's failure is never the run's: counted as missing
                continue
            if result is SpanExportResult.SUCCESS:
                self.delivered += len(batch)

    def send(self, goal_id: str, spans: Sequence[Span]) -> None:
        resource = Resource(dict(resource_attributes(goal_id)))
        batch: list[ReadableSpan] = [_Recorded(span, resource, self.scope) for span in spans]
        self.submitted += len(batch)
        self.queue.put(batch)

    def close(self, wait_s: float) -> str | None:
        self.queue.put(None)
        self.thread.join(wait_s)
        # Ends a retry's wait; a request under way is abandoned. (Unannotated in the SDK.)
        self.exporter.shutdown()  # type: ignore[no-untyped-call]
        missing = self.submitted - self.delivered
        if missing <= 0:
            return None
        return (
            f"{missing} of {self.submitted} span(s) not exported: the OTLP collector failed or "
            f"did not answer within {wait_s:g} s (the run is not affected; `harness trace` "
            "renders them from the ledger)"
        )
