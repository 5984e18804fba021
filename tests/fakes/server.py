"""The scripted model server: one HTTP server on 127.0.0.1 for every protocol.

Started on port 0 in a thread (`with ModelServer(script) as server:`), it answers each
model call from its `Script` in the wire format the request's path names
(`anthropic`, `responses`, `chat`), streamed when the request's body asks for it, and
records every request it gets, model call or not: a test reads `server.requests` to count
a build's model calls or to show that no URL was fetched.

It also works as an HTTP(S) proxy that refuses everything: point a tool's `HTTPS_PROXY` at
`server.url` (with `NO_PROXY=127.0.0.1`) and any outbound request it tries is recorded
(a `CONNECT host:443`, or a plain `GET http://…`) and answered 403, never forwarded.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol

from tests.fakes import anthropic, chat, responses
from tests.fakes.script import Reply, Request, Script

REDACTED = {"authorization", "x-api-key", "api-key", "cookie", "openai-api-key"}
MAX_BODY = 64 * 1024 * 1024


class Wire(Protocol):
    """What each protocol module provides (tests/fakes/anthropic.py, responses.py, chat.py)."""

    DONE_MARKER: bool

    def matches(self, path: str) -> bool: ...
    def message(self, reply: Reply, model: str) -> dict[str, Any]: ...
    def stream_events(
        self, reply: Reply, model: str
    ) -> list[tuple[str | None, dict[str, Any]]]: ...
    def error(self, reply: Reply) -> dict[str, Any]: ...
    def is_followup(self, body: Any) -> bool: ...


WIRES: dict[str, Wire] = {"anthropic": anthropic, "responses": responses, "chat": chat}


def protocol_of(path: str) -> str | None:
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/messages/count_tokens"):
        return None
    return next((name for name, wire in WIRES.items() if wire.matches(bare)), None)


def is_followup(request: Request) -> bool:
    """The request carries a tool's result (the model is asked to go on with its turn)."""
    return request.protocol is not None and WIRES[request.protocol].is_followup(request.body)


def _decoded(raw: bytes, encoding: str) -> bytes:
    try:
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except (OSError, zlib.error):
        return b""
    return raw if encoding in ("", "identity") else b""  # zstd and others: body unread


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None  # stderr stays quiet; every request is in `requests`

    def _headers(self) -> dict[str, str]:
        # Names lower-cased: HTTP header names are case-insensitive, and clients differ.
        pairs = ((k.lower(), v) for k, v in self.headers.items())
        return {k: ("<redacted>" if k in REDACTED else v) for k, v in pairs}

    def _body(self) -> Any:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        raw = self.rfile.read(length) if length else b""
        return _json(_decoded(raw, self.headers.get("Content-Encoding", "").lower()))

    def _request(self, body: Any) -> Request:
        return Request(self.command, self.path, self._headers(), body, protocol_of(self.path))

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, body: Any = None) -> None:
        self.server.record(self._request(body), 403, None)
        self._send_json(403, {"error": {"message": "outbound request refused by the test server"}})

    def do_CONNECT(self) -> None:
        self._refuse()
        self.close_connection = True

    def do_HEAD(self) -> None:
        self.server.record(self._request(None), 200, None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if not self.path.startswith("/"):  # an absolute URL: a proxied fetch
            return self._refuse()
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self.server.record(self._request(None), 200, None)
            return self._send_json(200, {"object": "list", "data": [], "models": []})
        self.server.record(self._request(None), 404, None)
        self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = self._body()
        request = self._request(body)
        if not self.path.startswith("/"):
            return self._refuse(body)
        if request.protocol is None:
            status = 200 if "count_tokens" in self.path else 404
            self.server.record(request, status, None)
            return self._send_json(status, {"input_tokens": 1000} if status == 200 else {})
        index, reply = self.server.script.pick(request)
        if reply.text_of is not None:
            reply = dataclasses.replace(reply, text=reply.text_of(request))
        self.server.record(request, reply.status, index)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        self._answer(WIRES[request.protocol], reply, request)

    def _answer(self, wire: Wire, reply: Reply, request: Request) -> None:
        if reply.failed:
            retry = {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}
            return self._send_json(reply.status, wire.error(reply), retry)
        model = request.body.get("model", "model") if isinstance(request.body, dict) else "model"
        if not request.stream:
            return self._send_json(200, wire.message(reply, str(model)))
        self._stream(wire.stream_events(reply, str(model)), wire.DONE_MARKER)

    def _stream(self, events: list[tuple[str | None, dict[str, Any]]], done: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.log: list[Request] = []
        self.lock = threading.Lock()

    def record(self, request: Request, status: int, reply: int | None) -> None:
        done = Request(**(vars(request) | {"status": status, "reply": reply}))
        with self.lock:
            self.log.append(done)


class ModelServer:
    """A scripted model API on 127.0.0.1 (a free port), served from a thread."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self._server = _Server(self.script)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Request]:
        with self._server.lock:
            return list(self._server.log)

    def model_calls(self, protocol: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.protocol and protocol in (None, r.protocol)]

    def others(self) -> list[Request]:
        """Every request that was not a model call (a fetched URL, a proxied request…)."""
        return [r for r in self.requests if r.protocol is None]

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def served(script: Script) -> Iterator[ModelServer]:
    """For a pytest fixture: `yield from served(script)`."""
    with ModelServer(script) as server:
        yield server
