"""A step's network as its goal file (or the config's default) names it: shared, none, or
only the hosts of an allowlist, reached through the harness's proxy (docs/specs/sandbox.md,
"Egress by name").

An allowlist entry is `HOST`, `*.DOMAIN` (any name strictly below DOMAIN), an IPv4 address
or a bracketed IPv6 one, each optionally with `:PORT` (without one, any port). Names are
compared in lower case, without a trailing dot. The same matching runs in the proxy
(`loop/contain/proxy.py`), which imports this module, so what `harness check` accepts is
what the proxy lets through.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.errors import invalid
from harness.model.wording import got, show_value

MAX_ALLOWED = 100  # entries in one step's allowlist
ENTRY_EXPECTED = (
    "a host name (api.example.com), *.DOMAIN (every name below it), an IPv4 address or a "
    "bracketed IPv6 one, each optionally with :PORT (1-65535)"
)
NETWORK_EXPECTED = (
    "true (the default), false, or {allow: [HOST, *.DOMAIN, HOST:PORT, …]} (false and allow "
    "need the sandbox)"
)
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PORT = re.compile(r"[1-9][0-9]{0,4}")
MAX_NAME_CHARS = 253
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Destination:
    """One allowlist entry: a name, a wildcard's domain or an address, and a port (None:
    any)."""

    host: str  # lower case; a wildcard's domain without `*.`; an address as Python writes it
    port: int | None = None
    wildcard: bool = False
    address: IpAddress | None = None

    def matches(self, host: str, port: int, address: IpAddress | None) -> bool:
        """Whether a request for `host` (normalised by `normal_host`) and `port` is this
        entry's: an address only an address entry, a name only a name or wildcard entry."""
        if self.port is not None and self.port != port:
            return False
        if address is not None or self.address is not None:
            return address is not None and address == self.address
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        shown = f"*.{self.host}" if self.wildcard else self.host
        if self.address is not None and self.address.version == 6:
            shown = f"[{shown}]"
        return shown if self.port is None else f"{shown}:{self.port}"


@dataclass(frozen=True)
class Allowlist:
    """`network: {allow: [...]}`: the only destinations a step may reach, by name."""

    entries: tuple[Destination, ...]

    def allows(self, host: str, port: int) -> bool:
        """`host` as the request named it (`normal_host` first); False for anything that is
        not a host name or an address."""
        address = ip_literal(host)
        if address is None and not is_host_name(host):
            return False
        return any(entry.matches(host, port, address) for entry in self.entries)

    def lists_address(self, address: IpAddress, port: int) -> bool:
        """Whether the address itself (and port) is listed: a name that resolves to a
        loopback or link-local address is let through only then (proxy.py)."""
        return any(entry.matches(str(address), port, address) for entry in self.entries)

    def loopback_hosts(self) -> set[str]:
        """The loopback names and addresses the list names: NO_PROXY leaves those out, so
        a step's requests to them go through the proxy to the runner's."""
        found = set()
        for entry in self.entries:
            if entry.host == "localhost" and not entry.wildcard:
                found.add("localhost")
            elif entry.address is not None and entry.address.is_loopback:
                found.add(str(entry.address))
        return found

    def as_strings(self) -> list[str]:
        return [str(entry) for entry in self.entries]


@dataclass(frozen=True)
class Network:
    """A step's network: `shared` (the runner's, the default), none (`network: false`), or
    an `allow` list through the proxy (then `shared` is False)."""

    shared: bool = True
    allow: Allowlist | None = None

    @property
    def word(self) -> str | None:
        """How `step.started` records it: None (shared), `off` or `allowlist`."""
        if self.shared:
            return None
        return "off" if self.allow is None else "allowlist"


SHARED = Network()


def network_from(value: object, source: str, key: str) -> Network:
    """`network:` of a step (or a config default) after the schema: a boolean or a mapping
    with `allow`."""
    if isinstance(value, bool):
        return Network(shared=value)
    if not isinstance(value, Mapping) or "allow" not in value:
        raise invalid(source, key, got(value), NETWORK_EXPECTED)
    return Network(shared=False, allow=allowlist_from(value["allow"], source, f"{key}.allow"))


def allowlist_from(raw: object, source: str, key: str) -> Allowlist:
    if not isinstance(raw, list) or not raw:
        raise invalid(source, key, got(raw) if raw else "is empty", "a list of " + ENTRY_EXPECTED)
    if len(raw) > MAX_ALLOWED:
        problem = f"names {len(raw)} entries"
        raise invalid(source, key, problem, f"at most {MAX_ALLOWED} entries")
    entries = [
        destination_from(entry, source, f"{key}[{index}]") for index, entry in enumerate(raw)
    ]
    return Allowlist(tuple(dict.fromkeys(entries)))


def destination_from(entry: object, source: str, key: str) -> Destination:
    """One entry, or InvalidInput naming it."""
    if not isinstance(entry, str):
        raise invalid(source, key, got(entry), ENTRY_EXPECTED)
    parsed = parse_destination(entry)
    if isinstance(parsed, str):
        raise invalid(source, key, f"{show_value(entry)} {parsed}", ENTRY_EXPECTED)
    return parsed


def parse_destination(entry: str) -> Destination | str:
    """The entry, or why it is not one (a phrase that follows the entry in a message)."""
    host, port, problem = _split_port(entry.strip().lower())
    if problem:
        return problem
    if host.startswith("[") and host.endswith("]"):
        address = ip_literal(host[1:-1])
        if address is None or address.version != 6:
            return "is not a bracketed IPv6 address"
        return Destination(str(address), port, address=address)
    address = ip_literal(host)
    if address is not None:
        if address.version == 6:
            return "is an IPv6 address without brackets ([::1]:443)"
        return Destination(str(address), port, address=address)
    wildcard = host.startswith("*.")
    name = normal_host(host[2:] if wildcard else host)
    if "*" in name:
        return "has a * that is not a leading `*.`"
    if not is_host_name(name):
        return "is not a host name"
    if wildcard and "." not in name:
        return "names a whole top-level domain"
    return Destination(name, port, wildcard=wildcard)


def _split_port(text: str) -> tuple[str, int | None, str]:
    """(host, port, problem): `host:port`, `[v6]:port`, or a host alone."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return text, None, "has no closing ]"
        host, rest = text[: close + 1], text[close + 1 :]
        if not rest:
            return host, None, ""
        if not rest.startswith(":"):
            return host, None, "has something after ] that is not :PORT"
        return _with_port(host, rest[1:])
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return _with_port(host, port)
    return text, None, ""


def _with_port(host: str, port: str) -> tuple[str, int | None, str]:
    if not _PORT.fullmatch(port) or int(port) > 65535:
        return host, None, f"has port {port!r}, not a whole number from 1 to 65535"
    return host, int(port), ""


def ip_literal(host: str) -> IpAddress | None:
    """`host` as an address when it is written as one in the usual form (four decimal
    octets, or IPv6); `127.1` and `0x7f.0.0.1` are not (nor names: `is_host_name`)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_host_name(host: str) -> bool:
    """A DNS name of letters, digits and hyphens whose last label is not all digits (so no
    other spelling of an address, `2130706433` or `127.1`, passes as a name)."""
    if not host or len(host) > MAX_NAME_CHARS:
        return False
    labels = host.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        return False
    return not labels[-1].isdigit() and not labels[-1].startswith("0x")


def normal_host(host: str) -> str:
    """A requested host as entries are compared: lower case, no trailing dot, an IPv6
    address without its brackets."""
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") and not host.endswith("..") else host


def network_words(steps: Sequence[tuple[str, Network]]) -> list[str]:
    """`build.network: false`, `judge.network.allow`: the steps that need the sandbox."""
    return [
        f"{name}.network.allow" if net.allow is not None else f"{name}.network: false"
        for name, net in steps
        if not net.shared
    ]
