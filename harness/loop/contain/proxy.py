"""The egress proxy: the only way out of a step whose goal names an allowlist
(docs/specs/sandbox.md, "Egress by name").

It runs outside the sandbox, as a process of its own (`egress.py` starts it with the
listening Unix socket already bound, so a step never waits for it to start), and serves
HTTP proxy requests on the connections the step's forwarder (`forward.py`) passes it
through that socket (one byte and the connection's socket, `SCM_RIGHTS`: the proxy reads
the request from the step's own TCP connection and answers on it, so no second relay
copies the bytes), or made to the socket itself: `CONNECT host:port` (TLS passes through
untouched) and plain `http://` requests in absolute form, sent on with
`Connection: close`. A destination is let through only when the allowlist names it
(`model/network.py`); names are resolved here, outside, and a name whose addresses are the
runner's own (loopback, link-local, unspecified) is refused unless the address itself is
listed, so a listed name cannot be turned into a way to the runner's services. Every
attempt is counted per destination and verdict, with the bytes each way.

A thread per connection (and one more while it relays), the bytes moved by the kernel
(`os.splice` through a pipe) where it can: the standard library alone, no asyncio, so the
proxy is ready in a few tens of milliseconds and costs a step little (performance.md,
`egress_overhead`, `egress_start`).

A passed connection must be one TCP socket with the forwarder's one byte: anything else
the step sends along (a file, a pipe, a Unix socket, two descriptors) is closed unread and
counted as an unreadable request. Bounds, since the step is hostile: a request head of at
most 16 KiB read within 30 s, at most 256 connections at a time, 40 destinations itemised
(the rest counted), connecting within 30 s. Nothing a step sends can end the proxy: a
handler's failure closes its own connection. When its standard input closes (the step has
ended, or the harness has died) it stops, closes every connection, prints its record as
one JSON document and exits.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import selectors
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.loop.contain.forward import PASSED
from harness.model.network import (
    Allowlist,
    Destination,
    IpAddress,
    ip_literal,
    is_host_name,
    normal_host,
    parse_destination,
)

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 256
MAX_DESTINATIONS = 40
MAX_SHOWN_HOST = 100  # characters of a host kept in the record
CHUNK = 256 * 1024
UNREADABLE = "(unreadable request)"
BUSY = "(too many connections)"
_HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


@dataclass
class Tally:
    """One destination and verdict: how often, why (a denial), the bytes each way."""

    host: str
    port: int
    verdict: str  # allowed | denied
    count: int = 0
    failed: int = 0  # allowed, but the destination could not be reached
    sent: int = 0  # from the step
    received: int = 0  # to the step
    why: str = ""

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "verdict": self.verdict,
            "count": self.count,
            "sent": self.sent,
            "received": self.received,
        }
        if self.failed:
            data["failed"] = self.failed
        if self.why:
            data["why"] = self.why
        return data


@dataclass
class Ledger:
    """Every attempt, bounded: MAX_DESTINATIONS tallies, then counts per verdict. The
    connections' threads update it under `lock`."""

    tallies: dict[tuple[str, int, str], Tally] = field(default_factory=dict)
    more: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attempt(self, host: str, port: int, verdict: str, why: str = "") -> Tally:
        with self.lock:
            return self._attempt(host, port, verdict, why)

    def add(self, tally: Tally, name: str, count: int) -> None:
        """`count` more of `name` (sent, received, failed) on `tally`."""
        with self.lock:
            setattr(tally, name, getattr(tally, name) + count)

    def _attempt(self, host: str, port: int, verdict: str, why: str) -> Tally:
        shown = host if len(host) <= MAX_SHOWN_HOST else "…" + host[-(MAX_SHOWN_HOST - 1) :]
        key = (shown, port, verdict)
        tally = self.tallies.get(key)
        if tally is None:
            tally = Tally(shown, port, verdict, why=why)
            if len(self.tallies) < MAX_DESTINATIONS:
                self.tallies[key] = tally
            else:
                self.more[verdict] = self.more.get(verdict, 0) + 1
        tally.count += 1
        return tally

    def as_data(self) -> dict[str, Any]:
        record: dict[str, Any] = {"egress": [t.as_data() for t in self.tallies.values()]}
        if self.more:
            record["egress_more"] = dict(sorted(self.more.items()))
        return record


class BadRequest(Exception):
    """What a request head that is not a proxy request gets: 400, recorded as unreadable."""


@dataclass(frozen=True)
class Request:
    host: str  # as asked, normalised
    port: int
    connect: bool  # CONNECT; else a plain http:// request whose head is `head`
    head: bytes = b""


def parse_head(head: bytes) -> Request:
    """The request line and, for a plain request, the head to send on (hop-by-hop headers
    out, `Connection: close` in)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise BadRequest("not an HTTP/1 request line")
    method, target, version = parts
    if method == b"CONNECT":
        host, port = _authority(target.decode("latin-1"), None)
        return Request(host, port, connect=True)
    text = target.decode("latin-1")
    if text[:7].lower() != "http://":
        raise BadRequest("not a proxy request (CONNECT host:port, or an http:// URL)")
    rest = text[7:]
    cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0], default=len(rest))
    authority, path = rest[:cut], rest[cut:] or "/"
    if path.startswith("?"):
        path = "/" + path
    host, port = _authority(authority, 80)
    kept = [line for line in lines[1:] if line and _header_name(line) not in _HOP_HEADERS]
    if not any(_header_name(line) == b"host" for line in kept):
        kept.insert(0, b"Host: " + authority.encode("latin-1"))
    first = b" ".join([method, path.encode("latin-1"), version])
    return Request(host, port, False, b"\r\n".join([first, *kept, b"Connection: close", b"", b""]))


def _header_name(line: bytes) -> bytes:
    return line.split(b":", 1)[0].strip().lower()


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    if "@" in text or not text:
        raise BadRequest("not a host and port")
    if text.startswith("["):
        close = text.find("]")
        host, rest = text[: close + 1], text[close + 1 :]
    else:
        host, sep, port = text.rpartition(":")
        host, rest = (host, ":" + port) if sep else (text, "")
    if not rest and default_port is not None:
        return normal_host(host), default_port
    if not rest.startswith(":") or not rest[1:].isdigit() or not 0 < int(rest[1:]) < 65536:
        raise BadRequest("not a host and port")
    return normal_host(host), int(rest[1:])


def _internal(address: IpAddress) -> bool:
    """The runner's own: loopback, link-local (a cloud's metadata service), unspecified,
    multicast, also written as an IPv4-mapped IPv6 address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_multicast
    )


class Proxy:
    """Serves one step's connections under one allowlist; `resolve` is the test hook
    (`HARNESS_EGRESS_RESOLVE`): names resolved to the given addresses, as listed."""

    def __init__(self, allow: Allowlist, resolve: Mapping[str, Sequence[str]]) -> None:
        self.allow = allow
        self.resolve = {normal_host(name): tuple(addrs) for name, addrs in resolve.items()}
        self.ledger = Ledger()
        self.open: set[socket.socket] = set()  # every socket of a connection being served
        self.serving = 0  # connections from the step being served
        self.lock = threading.Lock()
        self.stopping = False

    def take(self, conn: socket.socket) -> None:
        """A new connection from the step: served on a thread of its own, or refused at
        once past MAX_CONNECTIONS."""
        with self.lock:
            busy = self.stopping or self.serving >= MAX_CONNECTIONS
            if not busy:
                self.open.add(conn)
                self.serving += 1
        if busy:
            self.ledger.attempt(BUSY, 0, "denied", "too many connections at once")
            conn.close()
            return
        threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        held = [conn]  # every socket this connection opened or was passed, closed at its end
        try:
            self.serve(conn, held)
        except Exception:  # a step's connection never ends the proxy
            pass
        finally:
            for sock in held:
                self.forget(sock)
            with self.lock:
                self.serving -= 1

    def forget(self, sock: socket.socket) -> None:
        with self.lock:
            self.open.discard(sock)
        sock.close()

    def serve(self, conn: socket.socket, held: list[socket.socket]) -> None:
        """One request, answered or relayed; the sockets it opens or is passed go in `held`."""
        try:
            conn, data = self.receive(conn, held)
            head, rest = _read_head(conn, data)
            request = parse_head(head)
        except (BadRequest, OSError):
            self.ledger.attempt(UNREADABLE, 0, "denied", "not an HTTP proxy request")
            _answer(conn, 400, "harness: not an HTTP proxy request")
            return
        host, port = request.host, request.port
        why = self.refusal(host, port)
        try:
            addresses = [] if why else self.addresses(host, port)
        except Denied as exc:
            why = str(exc)
        except OSError as exc:  # the name does not resolve
            self.ledger.add(self.ledger.attempt(host, port, "allowed"), "failed", 1)
            _answer(conn, 502, f"harness: {host}:{port}: {exc}")
            return
        if why:
            self.ledger.attempt(host, port, "denied", why)
            _answer(conn, 403, f"harness: {host}:{port} {why}")
            return
        tally = self.ledger.attempt(host, port, "allowed")
        try:
            upstream = self.connect(addresses, port)
        except OSError as exc:
            self.ledger.add(tally, "failed", 1)
            _answer(conn, 502, f"harness: {host}:{port}: {exc}")
            return
        held.append(upstream)
        if request.connect:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        first = rest if request.connect else request.head + rest
        upstream.sendall(first)
        self.ledger.add(tally, "sent", len(first))
        self.relay(conn, upstream, tally)

    def receive(
        self, conn: socket.socket, held: list[socket.socket]
    ) -> tuple[socket.socket, bytes]:
        """The connection to serve and what it has sent so far: the step's own connection
        when the forwarder passed it (one byte and one TCP socket), else `conn` itself."""
        conn.settimeout(HEAD_TIMEOUT_S)
        data, fds, flags, _ = socket.recv_fds(conn, HEAD_LIMIT, 1)
        if not fds and not flags & socket.MSG_CTRUNC:
            return conn, data
        passed = _passed(data, fds, flags)
        held.append(passed)
        with self.lock:
            self.open.add(passed)
        held.remove(conn)  # the forwarder's part is done: its socket is closed at once
        self.forget(conn)
        return passed, b""

    def refusal(self, host: str, port: int) -> str:
        """Why the request is refused before anything is resolved ("" when it may go on)."""
        if ip_literal(host) is None and not is_host_name(host):
            return "is not a host name"
        if not self.allow.allows(host, port):
            return "is not in this step's network allowlist"
        return ""

    def addresses(self, host: str, port: int) -> list[IpAddress]:
        """Where a listed host may be reached; `Denied` when every address it resolves to
        is the runner's own and none of those is listed."""
        literal = ip_literal(host)
        if literal is not None:
            return [literal]  # listed as itself: allows() checked it
        if host in self.resolve:  # the runner's own mapping (the test hook)
            return [address for a in self.resolve[host] if (address := ip_literal(a))]
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        every = list(dict.fromkeys(ip for *_, sockaddr in found if (ip := _ip(str(sockaddr[0])))))
        kept = [a for a in every if not _internal(a) or self.allow.lists_address(a, port)]
        if every and not kept:
            raise Denied(f"resolves to {every[0]}, the runner's own, which is not listed")
        return kept

    def connect(self, addresses: Sequence[IpAddress], port: int) -> socket.socket:
        """A connection to the first of `addresses` that answers, kept among `open`."""
        error = OSError("no address")
        for address in addresses:
            try:
                upstream = socket.create_connection((str(address), port), CONNECT_TIMEOUT_S)
            except OSError as exc:
                error = exc
                continue
            upstream.settimeout(None)
            with self.lock:
                self.open.add(upstream)
            return upstream
        raise error

    def relay(self, conn: socket.socket, upstream: socket.socket, tally: Tally) -> None:
        back = threading.Thread(
            target=_pump, args=(upstream, conn, self.ledger, tally, "received"), daemon=True
        )
        back.start()
        _pump(conn, upstream, self.ledger, tally, "sent")
        back.join()

    def stop(self) -> None:
        """No more connections; every open one is ended (its threads then finish)."""
        with self.lock:
            self.stopping = True
            ending = list(self.open)
        for sock in ending:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Denied(Exception):
    """An allowed name that leads somewhere the allowlist does not let the step go."""


def _ip(text: str) -> IpAddress | None:
    return ip_literal(text.split("%", 1)[0])


def _passed(data: bytes, fds: list[int], flags: int) -> socket.socket:
    """The TCP socket the forwarder passed with its one byte; anything else is closed and
    refused (BadRequest)."""
    sock = None
    if len(fds) == 1 and data == PASSED and not flags & socket.MSG_CTRUNC:
        with contextlib.suppress(OSError):  # not a socket at all
            sock = socket.socket(fileno=fds[0])
            fds = []
    if sock is not None and sock.family in _TCP and sock.type == socket.SOCK_STREAM:
        return sock
    for fd in fds:
        os.close(fd)
    if sock is not None:
        sock.close()
    raise BadRequest("not a connection passed by the forwarder")


_TCP = (socket.AF_INET, socket.AF_INET6)


def _read_head(conn: socket.socket, data: bytes = b"") -> tuple[bytes, bytes]:
    """The request head (without its blank line) and what came after it (`data`: what was
    read already), read within HEAD_TIMEOUT_S and HEAD_LIMIT; BadRequest for anything else."""
    conn.settimeout(HEAD_TIMEOUT_S)
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise BadRequest("a request head over 16 KiB")
        chunk = conn.recv(HEAD_LIMIT)
        if not chunk:
            raise BadRequest("the request head ended early")
        data += chunk
    conn.settimeout(None)
    head, _, rest = data.partition(b"\r\n\r\n")
    if len(head) > HEAD_LIMIT:
        raise BadRequest("a request head over 16 KiB")
    return head, rest


def _answer(conn: socket.socket, code: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
    body = (text + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        conn.settimeout(HEAD_TIMEOUT_S)
        conn.sendall(head.encode() + body)


def _pump(
    source: socket.socket, sink: socket.socket, ledger: Ledger, tally: Tally, name: str
) -> None:
    """Bytes from `source` to `sink` until its end, counted as `name` on `tally`; then the
    end is passed on. The kernel moves them (splice through a pipe) where it can."""
    try:
        _splice(source, sink, ledger, tally, name)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _splice(
    source: socket.socket, sink: socket.socket, ledger: Ledger, tally: Tally, name: str
) -> None:
    read, write = os.pipe()
    try:
        while True:
            moved = os.splice(source.fileno(), write, CHUNK)
            if not moved:
                return
            left = moved
            while left:
                left -= os.splice(read, sink.fileno(), left)
            ledger.add(tally, name, moved)
    finally:
        os.close(read)
        os.close(write)


def serve(listener: socket.socket, proxy: Proxy) -> None:
    """Accept until standard input ends (the step has ended, or the harness has died)."""
    listener.setblocking(False)
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    with contextlib.suppress(BlockingIOError, InterruptedError):
                        conn, _ = listener.accept()
                        conn.setblocking(True)
                        proxy.take(conn)
                elif not os.read(sys.stdin.fileno(), 4096):
                    return


def main(argv: Sequence[str]) -> int:
    """`<fd of the listening socket> <JSON: {"allow": [...], "resolve": {...}}>`."""
    fd, config = int(argv[0]), json.loads(argv[1])
    entries = [parse_destination(entry) for entry in config["allow"]]
    allow = Allowlist(tuple(entry for entry in entries if isinstance(entry, Destination)))
    proxy = Proxy(allow, config.get("resolve", {}))
    threading.stack_size(256 * 1024)
    with socket.socket(fileno=fd) as listener:
        serve(listener, proxy)
    proxy.stop()
    with proxy.ledger.lock:
        record = proxy.ledger.as_data()
    sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
