"""OpenAI Responses (`POST /v1/responses`), as Codex 0.171 reads it.

Codex always streams; it parses each event's `data.type` (the `event:` lines are sent but
not needed) and needs `response.completed`, without which it retries the whole request.
A tool call with JSON arguments is a `function_call` (codex's `exec_command {cmd}`); a
call with a string input is a `custom_tool_call` (codex's freeform `apply_patch`).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from tests.fakes.script import Reply

SseEvent = tuple[str | None, dict[str, Any]]
DONE_MARKER = False
ERROR_CODES = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_is_overloaded"}


def matches(path: str) -> bool:
    return path.endswith("/responses")


def _uid(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:20]


def _items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        content = [{"type": "output_text", "text": reply.text, "annotations": []}]
        items.append(
            {
                "type": "message",
                "id": _uid("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    for tool in reply.tools:
        common = {"call_id": _uid("call_"), "name": tool.name, "status": "completed"}
        if isinstance(tool.input, str):
            items.append(
                {"type": "custom_tool_call", "id": _uid("ctc_"), "input": tool.input} | common
            )
        else:
            arguments = json.dumps(dict(tool.input))
            items.append(
                {"type": "function_call", "id": _uid("fc_"), "arguments": arguments} | common
            )
    return items


def _usage(reply: Reply) -> dict[str, Any]:
    tokens = reply.tokens
    return {
        "input_tokens": tokens.input,
        "input_tokens_details": {"cached_tokens": tokens.cached},
        "output_tokens": tokens.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens.input + tokens.output,
    }


def _response(model: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": _uid("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": status,
        "output": output,
    }


def message(reply: Reply, model: str) -> dict[str, Any]:
    return _response(model, "completed", _items(reply)) | {"usage": _usage(reply)}


def stream_events(reply: Reply, model: str) -> list[SseEvent]:
    items = _items(reply)
    events: list[SseEvent] = [
        (
            "response.created",
            {"type": "response.created", "response": _response(model, "in_progress", [])},
        )
    ]
    for index, item in enumerate(items):
        added = {
            "type": "response.output_item.added",
            "output_index": index,
            "item": item | {"status": "in_progress"},
        }
        events.append(("response.output_item.added", added))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            delta = {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": text,
            }
            events.append(("response.output_text.delta", delta))
        done = {"type": "response.output_item.done", "output_index": index, "item": item}
        events.append(("response.output_item.done", done))
    completed = message(reply, model) | {"output": items}
    events.append(("response.completed", {"type": "response.completed", "response": completed}))
    return events


def error(reply: Reply) -> dict[str, Any]:
    code = ERROR_CODES.get(reply.status, "server_error")
    return {"error": {"message": reply.message, "type": code, "code": code, "param": None}}


def is_followup(body: Any) -> bool:
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
        return False
    return items[-1].get("type") in ("function_call_output", "custom_tool_call_output")
