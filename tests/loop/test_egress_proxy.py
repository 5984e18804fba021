"""The egress proxy as a real process (loop/contain/proxy.py, started by egress.py), talked
to through its Unix socket as a step's forwarder would: what it lets through, what it
refuses and records, and that nothing a hostile step sends ends it or grows it unbounded.
(A whole contained step through it: tests/e2e/test_sandbox_egress.py.)"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InvalidInput
from harness.loop.contain import proxy as proxy_module
from harness.loop.contain.egress import EgressProxy, egress_proxy, no_proxy, resolve_hook
from harness.loop.contain.forward import PASSED
from harness.loop.contain.layer import LayerFailure
from harness.model.network import allowlist_from


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers each GET with the request's own head, so a test sees what arrived."""

    def do_GET(self) -> None:
        body = (self.requestline + "\n" + str(self.headers)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    running = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=running.serve_forever, daemon=True).start()
    yield running.server_address[1]
    running.shutdown()
    running.server_close()


def _proxy(entries: list[str], env: dict[str, str] | None = None) -> EgressProxy:
    allow = allowlist_from(entries, "test", "allow")
    return EgressProxy(allow, resolve_hook(env or {}))


def _ask(socket_path: Path, head: bytes, then: bytes = b"") -> bytes:
    """Send a request head (and `then`) through the proxy's socket; all it answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(os.fspath(socket_path))  # blocking: waits while the backlog is full
        sock.settimeout(10)
        answer = b""
        try:
            sock.sendall(head + then)
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                answer += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # the proxy closed first (a connection past its bound)
    return answer


def _entries(record: dict[str, Any]) -> dict[tuple[str, int, str], dict[str, Any]]:
    return {(e["host"], e["port"], e["verdict"]): e for e in record["egress"]}


def test_a_listed_address_is_tunnelled_and_counted(server: int) -> None:
    with egress_proxy(allowlist_from([f"127.0.0.1:{server}"], "t", "a"), {}) as proxy:
        head = f"CONNECT 127.0.0.1:{server} HTTP/1.1\r\n\r\n".encode()
        get = b"GET /inside HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        answer = _ask(proxy.socket, head, get)
        record = proxy.stop()
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200 OK")
    assert b"GET /inside HTTP/1.1" in answer
    [entry] = record["egress"]
    assert (entry["host"], entry["port"], entry["verdict"], entry["count"]) == (
        "127.0.0.1",
        server,
        "allowed",
        1,
    )
    assert entry["sent"] == len(get) and entry["received"] == len(answer) - 39


def test_a_plain_request_goes_on_without_its_proxy_headers(server: int) -> None:
    with egress_proxy(allowlist_from([f"127.0.0.1:{server}"], "t", "a"), {}) as proxy:
        head = (
            f"GET http://127.0.0.1:{server}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{server}\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
            "Connection: keep-alive\r\nX-Kept: yes\r\n\r\n"
        ).encode()
        answer = _ask(proxy.socket, head).decode()
    assert answer.startswith("HTTP/1.0 200 OK")
    assert "GET /path?q=1 HTTP/1.1" in answer and "X-Kept: yes" in answer
    assert "Connection: close" in answer
    assert "Proxy-" not in answer and "keep-alive" not in answer


@pytest.mark.parametrize(
    ("entries", "target", "why"),
    [
        # not listed, by address or by a name the test hook resolves to the server
        (["127.0.0.1:1"], "127.0.0.1:{port}", "is not in this step's network allowlist"),
        (["127.0.0.1:1"], "a.test:{port}", "is not in this step's network allowlist"),
        # another spelling of 127.0.0.1 is no name, and matches no wildcard
        (["*.example.com"], "2130706433:{port}", "is not a host name"),
        (["*.example.com"], "127.1:{port}", "is not a host name"),
        (["*.example.com"], "evil.example.com.attacker.net:{port}", "is not in this"),
        # a listed name that resolves to the runner's own loopback (localhost, or a domain
        # whose owner points it there) is refused unless the address itself is listed
        (["localhost"], "localhost:{port}", "resolves to"),
    ],
)
def test_what_the_list_does_not_name_is_refused_and_recorded(
    server: int, entries: list[str], target: str, why: str
) -> None:
    where = target.format(port=server)
    with egress_proxy(
        allowlist_from(entries, "t", "a"), {"HARNESS_EGRESS_RESOLVE": "a.test=127.0.0.1"}
    ) as proxy:
        answer = _ask(proxy.socket, f"CONNECT {where} HTTP/1.1\r\n\r\n".encode())
        record = proxy.stop()
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert f"harness: {where} {why}".encode() in answer
    [entry] = record["egress"]
    assert entry["verdict"] == "denied" and entry["why"].startswith(why)
    assert f"{entry['host']}:{entry['port']}" == where
    assert entry["sent"] == entry["received"] == 0


def test_a_name_on_the_loopback_passes_when_its_address_is_listed(server: int) -> None:
    entries = ["localhost", f"127.0.0.1:{server}", f"[::1]:{server}"]
    with egress_proxy(allowlist_from(entries, "t", "a"), {}) as proxy:
        answer = _ask(proxy.socket, f"GET http://localhost:{server}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.0 200 OK")


@pytest.mark.parametrize(
    "head",
    [
        b"\x16\x03\x01\x02\x00garbage\r\n\r\n",  # a TLS hello sent to the proxy itself
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # a request for the proxy, not through it
        b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",  # TLS the proxy would have to make
        b"CONNECT user@127.0.0.1:80 HTTP/1.1\r\n\r\n",
        b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n",
        b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
        b"GET http://x/ HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n",  # a head over 16 KiB
        b"CONNECT 127.0.0.1:80 HTTP/1.1\r\n",  # a head that never ends
    ],
)
def test_garbage_gets_400_and_the_proxy_serves_on(server: int, head: bytes) -> None:
    with egress_proxy(allowlist_from([f"127.0.0.1:{server}"], "t", "a"), {}) as proxy:
        answer = _ask(proxy.socket, head)
        after = _ask(proxy.socket, f"GET http://127.0.0.1:{server}/ HTTP/1.1\r\n\r\n".encode())
        record = proxy.stop()
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert after.startswith(b"HTTP/1.0 200 OK")
    found = _entries(record)
    assert found[("(unreadable request)", 0, "denied")]["count"] == 1
    assert found[("127.0.0.1", server, "allowed")]["count"] == 1


@contextlib.contextmanager
def _tcp_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A step's connection to its forwarder: the client's end and the accepted one."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname()[:2])
        accepted, _ = listener.accept()
    with client, accepted:
        yield client, accepted


def _pass(socket_path: Path, data: bytes, fds: list[int]) -> bytes:
    """`data` with `fds` sent through the proxy's socket as the forwarder sends a
    connection (SCM_RIGHTS); what the proxy answers on that socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(os.fspath(socket_path))
        sock.settimeout(10)
        socket.send_fds(sock, [data], fds)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer


def _until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def test_a_connection_the_forwarder_passes_is_served_on_itself(server: int) -> None:
    """The forwarder's way (forward.py): the step's own TCP connection passed with one
    byte; the proxy reads the request from it and answers on it."""
    with (
        egress_proxy(allowlist_from([f"127.0.0.1:{server}"], "t", "a"), {}) as proxy,
        _tcp_pair() as (client, accepted),
    ):
        assert _pass(proxy.socket, PASSED, [accepted.fileno()]) == b""
        accepted.close()  # the forwarder keeps no copy
        client.sendall(f"GET http://127.0.0.1:{server}/via HTTP/1.1\r\n\r\n".encode())
        answer = _until_closed(client)
        record = proxy.stop()
    assert answer.startswith(b"HTTP/1.0 200 OK") and b"GET /via HTTP/1.1" in answer
    assert _entries(record)[("127.0.0.1", server, "allowed")]["count"] == 1


@pytest.mark.parametrize("what", ["a pipe", "a unix socket", "two sockets", "another byte"])
def test_what_is_not_one_passed_tcp_socket_is_closed_unread(server: int, what: str) -> None:
    """A hostile step can connect to the proxy's socket itself and pass anything: only one
    TCP socket with the forwarder's byte is served; the rest is closed, refused with 400
    on the proxy's socket and counted, and the proxy serves on."""
    allow = allowlist_from([f"127.0.0.1:{server}"], "t", "a")
    request = f"GET http://127.0.0.1:{server}/ HTTP/1.1\r\n\r\n".encode()
    with (
        egress_proxy(allow, {}) as proxy,
        _tcp_pair() as (client, accepted),
        _tcp_pair() as (_, second),
    ):
        read, write = os.pipe()
        unix, other = socket.socketpair()
        data, fds = {
            "a pipe": (PASSED, [read]),
            "a unix socket": (PASSED, [unix.fileno()]),
            "two sockets": (PASSED, [accepted.fileno(), second.fileno()]),
            "another byte": (b"x", [accepted.fileno()]),
        }[what]
        answer = _pass(proxy.socket, data, fds)
        for end in (read, write):
            os.close(end)
        for sock in (unix, other, accepted):
            sock.close()
        after = _ask(proxy.socket, request)
        closed = _until_closed(client)  # the proxy held the passed copy, and closed it
        record = proxy.stop()
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert closed == b""
    assert after.startswith(b"HTTP/1.0 200 OK")
    found = _entries(record)
    assert found[("(unreadable request)", 0, "denied")]["count"] == 1
    assert found[("127.0.0.1", server, "allowed")]["count"] == 1


def test_a_head_that_grows_past_16_kib_is_answered_at_once() -> None:
    # Read no further than the bound: a step that sends headers for ever gets its 400 while
    # it still sends (it has not closed its side), and the proxy holds no more of it.
    allow = allowlist_from(["127.0.0.1:1"], "t", "a")
    with egress_proxy(allow, {}) as proxy, socket.socket(socket.AF_UNIX) as sock:
        sock.connect(os.fspath(proxy.socket))
        sock.settimeout(5)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"CONNECT a.test:443 HTTP/1.1\r\nX: " + b"a" * 40_000)
        answer = sock.recv(100)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")


def test_connections_past_the_bound_are_refused_and_counted(server: int) -> None:
    request = f"GET http://127.0.0.1:{server}/ HTTP/1.1\r\n\r\n".encode()
    with egress_proxy(allowlist_from([f"127.0.0.1:{server}"], "t", "a"), {}) as proxy:
        assert _ask(proxy.socket, request).startswith(b"HTTP/1.0 200 OK")  # it serves
        idle = []
        for _ in range(proxy_module.MAX_CONNECTIONS + 4):  # each holds a connection open
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(os.fspath(proxy.socket))
            idle.append(sock)
        answer = _ask(proxy.socket, request)
        for sock in idle:
            sock.close()
        record = proxy.stop()
    assert answer == b""  # closed at once: the proxy holds at most MAX_CONNECTIONS
    assert _entries(record)[("(too many connections)", 0, "denied")]["count"] == 5


def test_destinations_past_the_bound_are_counted_not_listed() -> None:
    many = proxy_module.MAX_DESTINATIONS + 5
    with egress_proxy(allowlist_from(["127.0.0.1:1"], "t", "a"), {}) as proxy:
        for number in range(many):
            _ask(proxy.socket, f"CONNECT host{number}.test:443 HTTP/1.1\r\n\r\n".encode())
        _ask(proxy.socket, b"CONNECT host0.test:443 HTTP/1.1\r\n\r\n")  # one listed, again
        record = proxy.stop()
    assert len(record["egress"]) == proxy_module.MAX_DESTINATIONS
    assert record["egress"][0]["count"] == 2
    assert record["egress_more"] == {"denied": 5}


def test_a_long_host_is_kept_by_its_end() -> None:
    name = ".".join(["a" * 60] * 4) + ".test"  # 249 characters: a valid name
    with egress_proxy(allowlist_from(["127.0.0.1:1"], "t", "a"), {}) as proxy:
        _ask(proxy.socket, f"CONNECT {name}:443 HTTP/1.1\r\n\r\n".encode())
        [entry] = proxy.stop()["egress"]
    assert entry["host"] == "…" + name[-99:]


def test_a_proxy_that_died_leaves_a_record_that_says_so() -> None:
    with egress_proxy(allowlist_from(["127.0.0.1:1"], "t", "a"), {}) as proxy:
        assert proxy.proc is not None
        os.kill(proxy.proc.pid, signal.SIGKILL)
        record = proxy.stop()
    assert record == {"egress": [], "egress_error": "the egress proxy ended early (exit -9)"}


def test_the_proxy_folder_is_private_and_removed() -> None:
    proxy = _proxy(["127.0.0.1:1"])
    proxy.start()
    try:
        assert proxy.folder.stat().st_mode & 0o777 == 0o700
        assert proxy.socket.is_socket()
    finally:
        proxy.close()
    assert not proxy.folder.exists()


def test_no_proxy_leaves_out_the_loopback_hosts_the_list_names() -> None:
    assert no_proxy(allowlist_from(["api.example.com"], "t", "a")) == "localhost,127.0.0.1,::1"
    listed = allowlist_from(["127.0.0.1:8080", "localhost:3"], "t", "a")
    assert no_proxy(listed) == "::1"


@pytest.mark.parametrize("value", ["a.test", "a.test=", "=127.0.0.1", "a b=127.0.0.1", "x=1.2.3"])
def test_the_test_hook_refuses_what_is_not_name_equals_address(value: str) -> None:
    with pytest.raises(InvalidInput, match="HARNESS_EGRESS_RESOLVE"):
        resolve_hook({"HARNESS_EGRESS_RESOLVE": value})


def test_a_proxy_that_cannot_start_is_a_step_that_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An error path no real setup produces on demand (the interpreter gone, no processes
    # left): the step gets the reason, the run goes on.
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    allow = allowlist_from(["127.0.0.1:1"], "t", "a")
    with pytest.raises(LayerFailure) as caught, egress_proxy(allow, {}):
        pass
    assert str(caught.value) == (
        "harness: the egress proxy could not start: [Errno 11] Resource temporarily unavailable"
    )
