"""The owner's ship decision as a DSSE envelope: `goals/<id>.dsse.jsonl` (issue 31).

Only the owner's machine holds the owner's key, so the envelope is made when the owner
signs a ship decision (`harness ship`), beside the SSHSIG record appended to
`goals/<id>.approval` (whose format does not change), and committed with it on the control
branch. The file holds one envelope a line, oldest first, and only grows. Its statement's
subject is the gate commit the decision binds to; its predicate is the decision statement's
fields (docs/specs/attest.md, "ship-decision").

The runner puts the envelope of the ship decision it used into the bundle only when its
signature verifies with a key of `.harness/owners` and its predicate is that decision, the
same goal, goal file, commit and ledger head.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InvalidInput, TrustFailure, invalid
from harness.store.fsutil import atomic_write
from harness.trust.intoto import (
    SHIP_DECISION,
    envelope_line,
    payload_of,
    sign_statement,
    statement,
    verify_envelope,
)
from harness.trust.owners import Owner
from harness.trust.statement import Statement

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_LINE_BYTES = 64 * 1024


def envelope_path(goal_id: str) -> str:
    return f"goals/{goal_id}.dsse.jsonl"


def decision_predicate(decision: Statement) -> dict[str, Any]:
    return {
        "goal": decision.goal,
        "sha256": decision.sha256,
        "decision": decision.decision,
        "commit": decision.commit,
        "ledger": decision.ledger,
    }


def decision_statement(decision: Statement) -> dict[str, Any]:
    """The in-toto Statement of a ship decision: subject the gate commit it binds to."""
    subject = {"name": f"{decision.goal}/gate-commit", "digest": {"gitCommit": decision.commit}}
    return statement([subject], SHIP_DECISION, decision_predicate(decision))


def sign_decision(decision: Statement, key: Ed25519PrivateKey) -> bytes:
    """The envelope's line, signed with the owner's key."""
    return envelope_line(sign_statement(decision_statement(decision), key))


def append_envelope(path: Path, line: bytes) -> None:
    """Add one envelope line (atomically; the file is made if missing, never rewritten)."""
    try:
        existing = path.read_bytes()
    except FileNotFoundError:
        existing = b""
    except OSError as exc:
        raise invalid(str(path), "", f"cannot be read ({exc.strerror})") from None
    if existing and not existing.endswith(b"\n"):
        raise invalid(str(path), "", "does not end with a newline", "one JSON envelope a line")
    atomic_write(path, existing + line)


@dataclass(frozen=True)
class Found:
    """The envelope of the used ship decision, or why there is none to include."""

    envelope: Mapping[str, Any] | None
    note: str | None


def find_decision_envelope(
    data: bytes | None, goal_id: str, decision: Mapping[str, Any], owners: Sequence[Owner]
) -> Found:
    """The envelope whose predicate is `decision` (the fields `decision.used` recorded and
    the goal file's sha256) signed by an owner. None with a note where the file has none (a
    decision signed without the attest extra). TrustFailure where one claims to be it but no
    owner's signature verifies: someone other than an owner wrote it."""
    source = envelope_path(goal_id)
    failures: list[str] = []
    for number, raw in enumerate((data or b"").splitlines(), start=1):
        where = f"{source}: line {number}"
        envelope = _parse_line(raw, where)
        if envelope is None:
            continue
        try:
            claimed = payload_of(envelope, where)
        except TrustFailure:
            continue
        if claimed.get("predicateType") != SHIP_DECISION or claimed.get("predicate") != decision:
            continue
        try:
            verify_envelope(envelope, [o.key_blob for o in owners], where)
        except TrustFailure as failure:
            failures.append(failure.message)
            continue
        return Found(envelope, None)
    if failures:
        raise TrustFailure(f"{failures[0]} (.harness/owners): not the owner's ship decision")
    return Found(
        None,
        f"{source}: no envelope of the ship decision used (signed without the attest extra: "
        "the bundle has the runner's envelopes only)",
    )


def _parse_line(raw: bytes, where: str) -> dict[str, Any] | None:
    if len(raw) > MAX_LINE_BYTES:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def used_decision(fields: Mapping[str, Any], goal_sha256: str, goal_id: str) -> dict[str, Any]:
    """The predicate a used ship decision's envelope must carry."""
    if fields.get("decision") != "ship":
        raise InvalidInput(f"goal {goal_id}: the last decision used is not a ship decision")
    return {
        "goal": goal_id,
        "sha256": goal_sha256,
        "decision": "ship",
        "commit": fields.get("commit"),
        "ledger": fields.get("ledger"),
    }
