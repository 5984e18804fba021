"""Format versions: the first thing every reader of a record checks.

The state cell carries `v` at its top level and every ledger event carries `v` inside its
`e` object; both keys keep that place in every format to come, so a reader finds the
version before it checks anything else (size, shape, MAC, fields). A version newer than
this code knows is refused as such, naming the file: "written by a newer goal-harness
(format N): upgrade", not as a broken or forged record (cell.md, ledger.md, "Format
versions"). Any other unknown version is a broken record.

A MAC'd record that holds a key this code does not know was written by a holder of the
secret, so by a harness: a newer one that added the key. It is refused the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.errors import TrustFailure
from harness.store.fsutil import strict_json_loads

# How much of a versioned file is read to find its version: a newer format may allow a
# larger file than this one's bound, and is then named as newer rather than as too large.
READ_BYTES = 1024 * 1024


class NewerFormat(TrustFailure):
    """A record written by a newer goal-harness than this one (exit 3)."""


def newer_text(version: Any) -> str:
    return f"written by a newer goal-harness (format {version}): upgrade goal-harness to read it"


def is_newer(version: Any, known: int) -> bool:
    return type(version) is int and version > known


def check_version(version: Any, known: int, source: str, what: str) -> None:
    """Refuse any version but `known`: a newer one as newer, anything else as unknown."""
    if type(version) is int and version == known:
        return
    if is_newer(version, known):
        raise NewerFormat(f"{source}: {newer_text(version)} (this one reads {what} format {known})")
    raise TrustFailure(
        f"{source}: unknown {what} format version {version!r} (this harness reads version {known})"
    )


def unknown_keys(raw: dict[str, Any], known: Iterable[str]) -> list[str]:
    return sorted(set(raw) - set(known))


def refuse_unknown_keys(
    raw: dict[str, Any], known: Iterable[str], version: int, source: str, what: str
) -> None:
    """A record of this format holding keys this code does not know: a newer harness added
    them within the format (readers before format versions were checked first did so)."""
    extra = unknown_keys(raw, known)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise NewerFormat(
            f"{source}: holds {what} field(s) this goal-harness does not know ({shown}): "
            f"{newer_text(version)}"
        )


def versioned_object(data: bytes, source: str, what: str, known: int, limit: int) -> dict[str, Any]:
    """The file's JSON object, its `v` checked before anything else (its size included),
    then its size against this format's `limit`."""
    if len(data) > max(limit, READ_BYTES):
        raise TrustFailure(f"{source}: the {what} is {len(data)} bytes (limit {limit})")
    try:
        raw = strict_json_loads(data)
    except ValueError as exc:
        raise TrustFailure(f"{source}: the {what} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise TrustFailure(f"{source}: the {what} is not a JSON object")
    check_version(raw.get("v"), known, source, what)
    if len(data) > limit:
        raise TrustFailure(f"{source}: the {what} is {len(data)} bytes (limit {limit})")
    return raw
