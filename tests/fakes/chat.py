"""OpenAI chat completions (`POST /v1/chat/completions`), as aider 0.86 (litellm) reads it.

aider sends no tools: its edits are SEARCH/REPLACE blocks in the answer's text (`edit()`
writes one). With `--no-stream` it reads the plain JSON body and its `usage`; a stream is
`chat.completion.chunk` lines, a usage chunk, then `data: [DONE]` (aider streaming asks for
no usage and counts tokens itself).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from tests.fakes.script import Reply

SseEvent = tuple[str | None, dict[str, Any]]
DONE_MARKER = True
ERROR_CODES = {429: "rate_limit_exceeded", 500: "server_error", 503: "server_is_overloaded"}


def matches(path: str) -> bool:
    return path.endswith("/chat/completions")


def edit(path: str, search: str, replace: str) -> str:
    """One aider SEARCH/REPLACE block for `path` (an empty `search` creates the file)."""
    return f"{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": "call_" + uuid.uuid4().hex[:20],
            "type": "function",
            "function": {
                "name": tool.name,
                "arguments": tool.input
                if isinstance(tool.input, str)
                else json.dumps(dict(tool.input)),
            },
        }
        for tool in reply.tools
    ]


def _usage(reply: Reply) -> dict[str, Any]:
    tokens = reply.tokens
    return {
        "prompt_tokens": tokens.input,
        "completion_tokens": tokens.output,
        "total_tokens": tokens.input + tokens.output,
        "prompt_tokens_details": {"cached_tokens": tokens.cached},
    }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tools else "stop"


def message(reply: Reply, model: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tools:
        answer["tool_calls"] = _calls(reply)
    choice = {"index": 0, "message": answer, "finish_reason": _finish(reply)}
    head = {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "created": int(time.time()), "model": model}
    return head | {"object": "chat.completion", "choices": [choice], "usage": _usage(reply)}


def stream_events(reply: Reply, model: str) -> list[SseEvent]:
    head = {
        "id": "chatcmpl-" + uuid.uuid4().hex[:20],
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> SseEvent:
        return None, head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = reply.text or ""
    chunks += [chunk({"content": text[i : i + 40]}) for i in range(0, len(text), 40)]
    if reply.tools:
        calls = [call | {"index": i} for i, call in enumerate(_calls(reply))]
        chunks.append(chunk({"tool_calls": calls}))
    chunks.append(chunk({}, _finish(reply)))
    chunks.append((None, head | {"choices": [], "usage": _usage(reply)}))
    return chunks


def error(reply: Reply) -> dict[str, Any]:
    code = ERROR_CODES.get(reply.status, "server_error")
    return {"error": {"message": reply.message, "type": code, "code": code, "param": None}}


def is_followup(body: Any) -> bool:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return False
    return messages[-1].get("role") == "tool"
