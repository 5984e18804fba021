"""Anthropic Messages (`POST /v1/messages`), as Claude Code 2.1 reads it.

Streaming answers carry `event:` lines (Claude Code rejects a stream without them, then
retries once with `"stream": false`, which gets `message()`'s plain JSON body). Tool calls
are `tool_use` blocks whose input arrives as one `input_json_delta`; `stop_reason` is
`tool_use`, and the next request carries the `tool_result`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.fakes.script import Reply

SseEvent = tuple[str | None, dict[str, Any]]
DONE_MARKER = False
ERROR_TYPES = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}


def matches(path: str) -> bool:
    return path.endswith("/messages")


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    for tool in reply.tools:
        if isinstance(tool.input, str):
            raise ValueError(f"anthropic: tool {tool.name} needs a JSON input, not a string")
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:20],
                "name": tool.name,
                "input": dict(tool.input),
            }
        )
    return blocks


def _usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.tokens.input,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": reply.tokens.cached,
        "cache_creation_input_tokens": 0,
    }


def _head(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "msg_" + uuid.uuid4().hex[:20],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # The real API reports output_tokens 1 at message_start; the total comes in
        # message_delta (Claude Code's stream-json shows that 1 in its assistant events).
        "usage": _usage(reply, 1),
    }


def _stop(reply: Reply) -> str:
    return "tool_use" if reply.tools else "end_turn"


def message(reply: Reply, model: str) -> dict[str, Any]:
    """The whole answer as one JSON body (a `"stream": false` request)."""
    head = _head(reply, model)
    return head | {
        "content": _blocks(reply),
        "stop_reason": _stop(reply),
        "usage": _usage(reply, reply.tokens.output),
    }


def _block_events(index: int, block: dict[str, Any]) -> list[SseEvent]:
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def stream_events(reply: Reply, model: str) -> list[SseEvent]:
    events: list[SseEvent] = [
        ("message_start", {"type": "message_start", "message": _head(reply, model)})
    ]
    for index, block in enumerate(_blocks(reply)):
        events += _block_events(index, block)
    delta = {"stop_reason": _stop(reply), "stop_sequence": None}
    usage = {"output_tokens": reply.tokens.output}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def error(reply: Reply) -> dict[str, Any]:
    kind = ERROR_TYPES.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.message}}


def is_followup(body: Any) -> bool:
    """The request carries a tool result: the tool is continuing the same turn."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return False
    content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content
    )


def tool_result(body: Any) -> str:
    """The text of the newest tool result in the request ("" if none). Claude Code 2.1
    may put a system message after it (its budget line), so not only the last message."""
    parts = [part for message in body["messages"] for part in message["content"]]
    results = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_result"]
    inner = results[-1]["content"] if results else ""
    if isinstance(inner, list):  # text blocks
        return "".join(block.get("text", "") for block in inner)
    return str(inner)
