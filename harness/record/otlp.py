"""Spans as OTLP/JSON: the OpenTelemetry protocol's JSON encoding of an
`ExportTraceServiceRequest` (trace.md, "The file").

As the protocol's JSON encoding asks: field names in lowerCamelCase, trace and span ids
as hex strings (not base64), enums as integers, 64-bit integers (times in nanoseconds,
integer attribute values) as decimal strings. The bytes are the project's canonical JSON
(sorted keys, no spaces, UTF-8) and a newline: the same spans give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness import __version__
from harness.record.trace import SERVICE, Span, SpanEvent, resource_attributes
from harness.record.traceattrs import Attributes, Value
from harness.store.fsutil import canonical_json

SPAN_KIND_INTERNAL = 1
STATUS_CODE_ERROR = 2


def otlp_json(spans: Iterable[Span], goal_id: str) -> bytes:
    """One request holding the goal's spans: one resource (the goal), one scope."""
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource_attributes(goal_id))},
                "scopeSpans": [
                    {
                        "scope": {"name": SERVICE, "version": __version__},
                        "spans": [_span(span) for span in spans],
                    }
                ],
            }
        ]
    }
    return canonical_json(document) + b"\n"


def _span(span: Span) -> dict[str, Any]:
    encoded: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": _attributes(span.attributes),
        "events": [_event(event) for event in span.events],
        # Unset (an empty status) unless the step failed, as the SDK sends it.
        "status": {} if span.error is None else {"code": STATUS_CODE_ERROR, "message": span.error},
    }
    if span.dropped_events:
        encoded["droppedEventsCount"] = span.dropped_events
    return encoded


def _event(event: SpanEvent) -> dict[str, Any]:
    return {
        "timeUnixNano": str(event.time_ns),
        "name": event.name,
        "attributes": _attributes(event.attributes),
    }


def _attributes(pairs: Attributes) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in pairs]


def _value(value: Value) -> dict[str, Any]:
    # bool before int: a bool is an int to Python, not to OTLP.
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, tuple):
        return {"arrayValue": {"values": [{"stringValue": item} for item in value]}}
    return {"stringValue": value}
