"""Reading OTLP the way a collector does, with `opentelemetry-proto`'s own message types:
JSON (`harness trace`) through protobuf's JSON parser, protobuf (live export) as sent."""

from __future__ import annotations

import base64
import json
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _ids_as_base64(value: Any) -> Any:
    """OTLP/JSON writes ids as hex, where protobuf's JSON mapping of `bytes` is base64: a
    receiver turns them back before parsing (the OTLP specification, "JSON Protobuf
    Encoding")."""
    if isinstance(value, list):
        return [_ids_as_base64(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        key: base64.b64encode(bytes.fromhex(item)).decode()
        if key in ID_FIELDS
        else _ids_as_base64(item)
        for key, item in value.items()
    }


def parse_json(text: str | bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    json_format.ParseDict(_ids_as_base64(json.loads(text)), request)
    return request


def parse_json_as_is(text: str | bytes) -> ExportTraceServiceRequest:
    """protobuf's JSON parser on the bytes as written, nothing turned first."""
    return json_format.Parse(text, ExportTraceServiceRequest())


def parse_protobuf(body: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return request


def all_spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [
        span
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def attributes(span: Span) -> dict[str, Any]:
    """A span's attributes as plain values (arrays as lists)."""
    found = {}
    for pair in span.attributes:
        value = json_format.MessageToDict(pair.value)
        (kind, item) = next(iter(value.items()))
        if kind == "intValue":
            item = int(item)
        elif kind == "arrayValue":
            item = [next(iter(v.values())) for v in item.get("values", [])]
        found[pair.key] = item
    return found
