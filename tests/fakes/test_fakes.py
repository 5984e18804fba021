"""The scripted server's own checks: quick, no agent CLI needed."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.anthropic import tool_result
from tests.fakes.chat import edit
from tests.fakes.script import Reply, Script, Tokens, ToolCall, call, fail, say
from tests.fakes.server import ModelServer, is_followup


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def post(server: ModelServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def sse(data: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) per SSE frame."""
    frames = []
    for frame in data.decode().split("\n\n"):
        if not frame:
            continue
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        frames.append((lines.get("event"), lines["data"]))
    return frames


def test_anthropic_stream_names_every_event_and_reports_usage(server: ModelServer) -> None:
    server.script.extend(
        [call("Write", {"file_path": "/r/a.txt", "content": "x\n"}, Tokens(2000, 100))]
    )
    status, headers, data = post(server, "/v1/messages?beta=true", {"model": "m", "stream": True})
    assert (status, headers["Content-Type"]) == (200, "text/event-stream")
    frames = sse(data)
    assert [name for name, _ in frames] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert json.loads(frames[0][1])["message"]["usage"]["input_tokens"] == 2000
    delta = json.loads(frames[2][1])["delta"]
    assert delta == {
        "type": "input_json_delta",
        "partial_json": '{"file_path": "/r/a.txt", "content": "x\\n"}',
    }
    closing = json.loads(frames[4][1])
    assert closing["delta"]["stop_reason"] == "tool_use"
    assert closing["usage"] == {"output_tokens": 100}


def test_anthropic_plain_json_when_not_streamed(server: ModelServer) -> None:
    status, _, data = post(server, "/v1/messages", {"model": "claude-x", "stream": False})
    body = json.loads(data)
    assert status == 200
    assert body["content"] == [{"type": "text", "text": "OK"}]
    assert (body["model"], body["stop_reason"], body["usage"]["output_tokens"]) == (
        "claude-x",
        "end_turn",
        50,
    )


def test_replies_in_order_then_repeat_then_default() -> None:
    script = Script([say("one"), say("two", repeat=2)], default=say("rest"))
    with ModelServer(script) as server:
        texts = [
            json.loads(post(server, "/v1/messages", {"model": "m"})[2])["content"][0]["text"]
            for _ in range(5)
        ]
        assert texts == ["one", "two", "two", "rest", "rest"]
        assert [r.reply for r in server.model_calls()] == [0, 1, 1, None, None]
        assert script.unused == []


def test_a_reply_with_when_waits_for_the_request_it_accepts(server: ModelServer) -> None:
    server.script.extend([Reply(text="after tool", when=is_followup), say("first")])
    first = post(server, "/v1/messages", {"messages": [{"role": "user", "content": "hi"}]})
    result = [{"type": "tool_result", "tool_use_id": "t", "content": "done"}]
    second = post(server, "/v1/messages", {"messages": [{"role": "user", "content": result}]})
    assert json.loads(first[2])["content"][0]["text"] == "first"
    assert json.loads(second[2])["content"][0]["text"] == "after tool"


def test_a_reply_made_from_its_request_repeats_the_tool_result(server: ModelServer) -> None:
    """`text_of`: a scripted model that repeats what the agent's tool printed (the request's
    newest tool result, wherever Claude Code put a system message after it)."""
    server.script.extend([Reply(text_of=lambda request: "saw " + tool_result(request.body))])
    result = [{"type": "tool_result", "tool_use_id": "t", "content": [{"text": "x=1"}]}]
    messages = [{"role": "user", "content": result}, {"role": "user", "content": []}]
    answer = post(server, "/v1/messages", {"messages": messages})
    assert json.loads(answer[2])["content"][0]["text"] == "saw x=1"


@pytest.mark.parametrize(
    ("path", "status", "expected"),
    [
        (
            "/v1/messages",
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "scripted 529"}},
        ),
        (
            "/v1/responses",
            429,
            {
                "error": {
                    "message": "scripted 429",
                    "type": "rate_limit_exceeded",
                    "code": "rate_limit_exceeded",
                    "param": None,
                }
            },
        ),
        (
            "/v1/chat/completions",
            500,
            {
                "error": {
                    "message": "scripted 500",
                    "type": "server_error",
                    "code": "server_error",
                    "param": None,
                }
            },
        ),
    ],
)
def test_an_outage_fails_every_call_with_retry_after(
    path: str, status: int, expected: dict[str, Any]
) -> None:
    with ModelServer(Script(default=fail(status, retry_after=1))) as server:
        answers = [post(server, path, {"stream": True}) for _ in range(3)]
        assert [(a[0], a[1]["retry-after"], json.loads(a[2])) for a in answers] == [
            (status, "1", expected)
        ] * 3
        assert [r.status for r in server.model_calls()] == [status] * 3


def test_responses_function_call_and_freeform_patch(server: ModelServer) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
    tools = (ToolCall("exec_command", {"cmd": "echo hi"}), ToolCall("apply_patch", patch))
    server.script.extend([Reply(tools=tools, tokens=Tokens(4000, 10, cached=1000))])
    _, _, data = post(server, "/v1/responses", {"model": "gpt-5.5", "stream": True})
    frames = [json.loads(body) for _, body in sse(data)]
    done = [f["item"] for f in frames if f["type"] == "response.output_item.done"]
    assert [(i["type"], i["name"]) for i in done] == [
        ("function_call", "exec_command"),
        ("custom_tool_call", "apply_patch"),
    ]
    assert json.loads(done[0]["arguments"]) == {"cmd": "echo hi"}
    assert done[1]["input"] == patch
    completed = frames[-1]
    assert completed["type"] == "response.completed"
    assert completed["response"]["usage"]["input_tokens_details"] == {"cached_tokens": 1000}


def test_chat_edit_block_plain_json_and_stream(server: ModelServer) -> None:
    block = edit("value.txt", "wrong\n", "right\n")
    assert block == "value.txt\n```\n<<<<<<< SEARCH\nwrong\n=======\nright\n>>>>>>> REPLACE\n```\n"
    server.script.extend([say(block, repeat=2)])
    plain = json.loads(post(server, "/v1/chat/completions", {"model": "gpt-4o"})[2])
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": block}
    assert plain["usage"]["prompt_tokens"] == 1000
    frames = sse(post(server, "/v1/chat/completions", {"model": "gpt-4o", "stream": True})[2])
    assert frames[-1] == (None, "[DONE]")
    chunks = [json.loads(body) for _, body in frames[:-1]]
    assert (
        "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        == block
    )


def test_every_other_request_is_recorded_and_nothing_is_forwarded(server: ModelServer) -> None:
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(server.url + "/docs/page", timeout=10)
    tunnel = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    tunnel.set_tunnel("example.invalid", 443)
    with pytest.raises(OSError, match="403"):
        tunnel.connect()
    assert [(r.method, r.path, r.status) for r in server.others()] == [
        ("GET", "/docs/page", 404),
        ("CONNECT", "example.invalid:443", 403),
    ]
    assert server.model_calls() == []


def test_secrets_in_headers_are_not_recorded(server: ModelServer) -> None:
    request = urllib.request.Request(
        server.url + "/v1/messages",
        b"{}",
        {"x-api-key": "sk-ant-real", "Authorization": "Bearer sk"},
    )
    urllib.request.urlopen(request, timeout=10).read()
    headers = server.requests[0].headers
    assert (headers["x-api-key"], headers["authorization"]) == ("<redacted>", "<redacted>")
