"""Owners: the `.harness/owners` file, in git's `allowed_signers` format.

Each line names principals, optionally the namespaces they may sign for, and an ed25519
key, so `ssh-keygen -Y verify -f .harness/owners` reads the same file. Anything ssh-keygen
would read as a pattern is refused, so the two verifiers never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import invalid
from harness.trust.problem import Problem, quote, shown_name
from harness.trust.sshsig import NAMESPACE
from harness.trust.sshwire import KEY_TYPE_LIKE, decode_key_text

OWNERS_FILE = ".harness/owners"
_OWNER_LINE = 'principals [namespaces="..."] ssh-ed25519 <base64 key> [comment]'

_OPTION = r'[A-Za-z0-9-]+(?:="[^"]*")?'
_LEADING_OPTIONS = re.compile(rf"{_OPTION}(?:,{_OPTION})*(?=\s|$)")
_OPTION_ITEM = re.compile(r'([A-Za-z0-9-]+)(?:="([^"]*)")?')
# ssh-keygen treats these as pattern syntax (or quoting) in principals and namespaces; exact
# matching here would then disagree with `ssh-keygen -Y verify`, so they are refused.
_PATTERN_CHARS = frozenset('*?!"')


@dataclass(frozen=True)
class Owner:
    """One line of the owners file."""

    principals: tuple[str, ...]
    key_blob: bytes  # SSH wire format: string "ssh-ed25519", string 32-byte key
    namespaces: tuple[str, ...] | None  # None: every namespace, as in allowed_signers
    line: int


def parse_owners(text: str, source: str) -> tuple[Owner, ...]:
    owners: list[Owner] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            owners.append(_parse_owner_line(line, number))
        except Problem as problem:
            raise invalid(source, f"line {number}", problem.problem, problem.expected) from None
    return tuple(owners)


def load_owners(path: Path, source: str) -> tuple[Owner, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise invalid(
            source, "", "file does not exist", "owner lines; `harness init --owner P --key PUBKEY`"
        ) from None
    except UnicodeDecodeError:
        raise invalid(source, "", "is not UTF-8 text", _OWNER_LINE) from None
    except OSError as error:
        raise invalid(source, "", f"cannot be read: {error.strerror}") from None
    return parse_owners(text, source)


def _parse_owner_line(line: str, number: int) -> Owner:
    head, *tail = line.split(maxsplit=1)
    rest = tail[0] if tail else ""
    if KEY_TYPE_LIKE.fullmatch(head):
        raise Problem("the line starts with a key type, not a principal", _OWNER_LINE)
    principals = _parse_principals(head)
    if rest.startswith("AAAA"):
        raise Problem("the key type is missing before the key", _OWNER_LINE)
    namespaces = None
    if rest and not KEY_TYPE_LIKE.fullmatch(rest.split()[0]):
        options, rest = _take_options(rest)
        namespaces = _parse_options(options)
    fields = rest.split()
    if len(fields) < 2:
        raise Problem("no key on the line", _OWNER_LINE)
    return Owner(principals, decode_key_text(fields[0], fields[1]), namespaces, number)


def _take_options(rest: str) -> tuple[str, str]:
    """Split the options field off the front; a quoted value may hold blanks, and the
    comment after the key may hold anything, unbalanced quotes included."""
    match = _LEADING_OPTIONS.match(rest)
    if match is None:
        field = rest.split()[0]
        problem = "a quote is not closed" if field.count('"') % 2 else "options are malformed"
        raise Problem(f"{problem} in {quote(field)}", 'namespaces="harness"')
    return match.group(0), rest[match.end() :]


def _parse_principals(field: str) -> tuple[str, ...]:
    principals = tuple(field.split(","))
    if "" in principals:
        raise Problem(f"empty principal in {quote(field)}", "principals separated by commas")
    for principal in principals:
        if _PATTERN_CHARS.intersection(principal):
            raise Problem(
                f"principal {quote(principal)} is a pattern or quoted",
                "plain principals such as alice@example.com",
            )
    return principals


def _parse_options(field: str) -> tuple[str, ...]:
    """The namespaces an options field allows; every other option is refused."""
    namespaces: tuple[str, ...] | None = None
    for match in _OPTION_ITEM.finditer(field):
        name, value = match.group(1), match.group(2)
        if name.lower() != "namespaces":
            raise Problem(f"option {shown_name(name)} is not supported", 'only namespaces="..."')
        if value is None or namespaces is not None:
            raise Problem("option namespaces is malformed", 'one namespaces="..." option')
        namespaces = _parse_namespaces(value)
    assert namespaces is not None  # _LEADING_OPTIONS matched, so there is one option at least
    return namespaces


def _parse_namespaces(value: str) -> tuple[str, ...]:
    namespaces = tuple(value.split(","))
    for namespace in namespaces:
        if not namespace or _PATTERN_CHARS.intersection(namespace):
            raise Problem(
                f"namespaces {quote(value)} is not a plain list",
                'namespaces="harness" or a comma-separated list without patterns',
            )
    return namespaces


def principals_for_key(
    owners: Sequence[Owner], key_blob: bytes, namespace: str = NAMESPACE
) -> tuple[str, ...]:
    """Principals of every owners line listing this key for this namespace; () if none."""
    found: list[str] = []
    for owner in owners:
        allowed = owner.namespaces is None or namespace in owner.namespaces
        if owner.key_blob == key_blob and allowed:
            found.extend(p for p in owner.principals if p not in found)
    return tuple(found)
