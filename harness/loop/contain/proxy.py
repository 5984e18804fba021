"""The egress proxy: the only way out of a step whose goal names an allowlist
(docs/specs/sandbox.md, "Egress by name").

It runs outside the sandbox, as a process of its own (`egress.py` starts it with the
listening Unix socket already bound, so a step never waits for it to start), and serves
HTTP proxy requests that arrive on that socket from the step's forwarder (`forward.py`):
`CONNECT host:port` (TLS passes through untouched) and plain `http://` requests in
absolute form, sent on with `Connection: close`. A destination is let through only when
the allowlist names it (`model/network.py`); names are resolved here, outside, and a name
whose addresses are the runner's own (loopback, link-local, unspecified) is refused unless
the address itself is listed, so a listed name cannot be turned into a way to the runner's
services. Every attempt is counted per destination and verdict, with the bytes each way.

Bounds, since the step is hostile: a request head of at most 16 KiB read within 30 s, at
most 256 connections at a time, 40 destinations itemised (the rest counted), connecting
within 30 s. Nothing a step sends can end the proxy: a handler's failure closes its own
connection. When its standard input closes (the step has ended, or the harness has died)
it stops, prints its record as one JSON document and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    """Every attempt, bounded: MAX_DESTINATIONS tallies, then counts per verdict."""

    tallies: dict[tuple[str, int, str], Tally] = field(default_factory=dict)
    more: dict[str, int] = field(default_factory=dict)

    def attempt(self, host: str, port: int, verdict: str, why: str = "") -> Tally:
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
        self.open = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open >= MAX_CONNECTIONS:
            self.ledger.attempt(BUSY, 0, "denied", "too many connections at once")
            writer.close()
            return
        self.open += 1
        try:
            await self.serve(reader, writer)
        except Exception:  # a step's connection never ends the proxy
            pass
        finally:
            self.open -= 1
            writer.close()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
            request = parse_head(head[:-4])
        except (BadRequest, asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
            self.ledger.attempt(UNREADABLE, 0, "denied", "not an HTTP proxy request")
            await _answer(writer, 400, "harness: not an HTTP proxy request")
            return
        host, port = request.host, request.port
        why = self.refusal(host, port)
        try:
            addresses = [] if why else await self.addresses(host, port)
        except Denied as exc:
            why = str(exc)
        except (OSError, TimeoutError) as exc:  # the name does not resolve
            self.ledger.attempt(host, port, "allowed").failed += 1
            await _answer(writer, 502, f"harness: {host}:{port}: {exc or 'no answer'}")
            return
        if why:
            self.ledger.attempt(host, port, "denied", why)
            await _answer(writer, 403, f"harness: {host}:{port} {why}")
            return
        tally = self.ledger.attempt(host, port, "allowed")
        try:
            upstream_reader, upstream = await _connect(addresses, port)
        except OSError as exc:
            tally.failed += 1
            await _answer(writer, 502, f"harness: {host}:{port}: {exc}")
            return
        try:
            if request.connect:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(request.head)
                tally.sent += len(request.head)
            await _relay(reader, writer, upstream_reader, upstream, tally)
        finally:
            upstream.close()

    def refusal(self, host: str, port: int) -> str:
        """Why the request is refused before anything is resolved ("" when it may go on)."""
        if ip_literal(host) is None and not is_host_name(host):
            return "is not a host name"
        if not self.allow.allows(host, port):
            return "is not in this step's network allowlist"
        return ""

    async def addresses(self, host: str, port: int) -> list[IpAddress]:
        """Where a listed host may be reached; `Denied` when every address it resolves to
        is the runner's own and none of those is listed."""
        literal = ip_literal(host)
        if literal is not None:
            return [literal]  # listed as itself: allows() checked it
        if host in self.resolve:  # the runner's own mapping (the test hook)
            return [address for a in self.resolve[host] if (address := ip_literal(a))]
        loop = asyncio.get_running_loop()
        found = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), CONNECT_TIMEOUT_S
        )
        every = list(dict.fromkeys(ip for *_, sockaddr in found if (ip := _ip(str(sockaddr[0])))))
        kept = [a for a in every if not _internal(a) or self.allow.lists_address(a, port)]
        if every and not kept:
            raise Denied(f"resolves to {every[0]}, the runner's own, which is not listed")
        return kept


class Denied(Exception):
    """An allowed name that leads somewhere the allowlist does not let the step go."""


async def _connect(
    addresses: Sequence[IpAddress], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first of `addresses` that answers."""
    error = OSError("no address")
    for address in addresses:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(str(address), port, limit=CHUNK), CONNECT_TIMEOUT_S
            )
        except TimeoutError:
            error = OSError(f"{address}: no answer within {CONNECT_TIMEOUT_S:.0f}s")
        except OSError as exc:
            error = exc
    raise error


def _ip(text: str) -> IpAddress | None:
    return ip_literal(text.split("%", 1)[0])


async def _answer(writer: asyncio.StreamWriter, code: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
    body = (text + "\n").encode("utf-8", "replace")
    writer.write(
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _relay(
    step_reader: asyncio.StreamReader,
    step: asyncio.StreamWriter,
    far_reader: asyncio.StreamReader,
    far: asyncio.StreamWriter,
    tally: Tally,
) -> None:
    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, out: bool) -> None:
        try:
            while data := await source.read(CHUNK):
                sink.write(data)
                if out:
                    tally.sent += len(data)
                else:
                    tally.received += len(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except OSError:
            sink.close()

    await asyncio.gather(pump(step_reader, far, True), pump(far_reader, step, False))


async def serve(listener: socket.socket, proxy: Proxy, stop: asyncio.Event) -> None:
    server = await asyncio.start_unix_server(proxy.handle, sock=listener, limit=HEAD_LIMIT)
    async with server:
        await stop.wait()
        server.close()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()
        await asyncio.sleep(0)


def _stop_on_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Standard input closes when the step has ended, or when the harness has died."""
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    loop.call_soon_threadsafe(stop.set)


def main(argv: Sequence[str]) -> int:
    """`<fd of the listening socket> <JSON: {"allow": [...], "resolve": {...}}>`."""
    fd, config = int(argv[0]), json.loads(argv[1])
    entries = [parse_destination(entry) for entry in config["allow"]]
    allow = Allowlist(tuple(entry for entry in entries if isinstance(entry, Destination)))
    proxy = Proxy(allow, config.get("resolve", {}))
    listener = socket.socket(fileno=fd)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        threading.Thread(target=_stop_on_eof, args=(loop, stop), daemon=True).start()
        await serve(listener, proxy, stop)

    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(run())
    sys.stdout.write(json.dumps(proxy.ledger.as_data(), sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
