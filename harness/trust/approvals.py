"""Approval files: `goals/<id>.approval`, the owner-signed decisions about one goal.

An owner approves a goal by signing a short statement with an ed25519 key listed in
`.harness/owners`. Each record is the statement's lines then its armored SSHSIG block, and
records are separated by one blank line, so the file stays readable and every record can be
checked with `ssh-keygen -Y verify`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import TrustFailure, invalid, located
from harness.store.fsutil import atomic_write
from harness.trust.owners import OWNERS_FILE, Owner, principals_for_key
from harness.trust.sshsig import ARMOR_BEGIN, ARMOR_END, verify
from harness.trust.sshwire import public_key_line
from harness.trust.statement import Statement

_APPROVE_HINT = "harness approve {goal} --key PRIVKEY"


class NotApproved(TrustFailure):
    """No owner has approved these goal bytes yet (none signed, or the file was edited since).

    Not a broken or forged record: `harness run` skips the goal with a note and exits 0
    (waiting for approval is a normal state); everything else that is refused stays exit 3.
    """


@dataclass(frozen=True)
class SignedRecord:
    statement: Statement
    statement_bytes: bytes
    armored: str
    index: int  # 1-based position in the file


@dataclass(frozen=True)
class Approval:
    """What a verified approval fixes: one decision about one goal file's bytes, the gate
    commit and ledger head it is bound to (None for `run` and `rotate-owners`), the owner
    principals who signed it, and which signature that was (its armored block's SHA-256)."""

    goal: str
    goal_sha256: str
    decision: str
    commit: str | None
    ledger: str | None
    signers: tuple[str, ...]
    signature_sha256: str


@dataclass(frozen=True)
class Verdict:
    record: SignedRecord
    principals: tuple[str, ...]  # the owner principals whose key signed it

    @property
    def approval(self) -> Approval:
        statement = self.record.statement
        return Approval(
            goal=statement.goal,
            goal_sha256=statement.sha256,
            decision=statement.decision,
            commit=statement.commit,
            ledger=statement.ledger,
            signers=self.principals,
            signature_sha256=hashlib.sha256(self.record.armored.encode()).hexdigest(),
        )


def parse_approval_file(text: str, source: str) -> tuple[SignedRecord, ...]:
    if not text:
        return ()
    if not text.endswith("\n"):
        raise invalid(source, "", "does not end with a newline", f"{ARMOR_END} then a newline")
    return tuple(_parse_record(chunk, index, source) for index, chunk in record_chunks(text))


def record_chunks(text: str) -> list[tuple[int, str]]:
    """Each record's text (1-based), of a file of records ending in a newline."""
    return list(enumerate(text[:-1].split("\n\n"), 1))


def load_approval_file(path: Path, source: str) -> tuple[SignedRecord, ...]:
    """The records of an approval file; () when it does not exist yet."""
    return parse_approval_file(_read_approval_text(path, source), source)


def _read_approval_text(path: Path, source: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise invalid(source, "", "is not UTF-8 text") from None


def _parse_record(chunk: str, index: int, source: str) -> SignedRecord:
    statement_bytes, armored = split_record(chunk, index, source)
    statement = Statement.parse(statement_bytes, f"{source}: record {index}")
    return SignedRecord(statement, statement_bytes, armored, index)


def split_record(chunk: str, index: int, source: str) -> tuple[bytes, str]:
    """A signed record's statement bytes and armored block (the layout of approval files,
    also `.harness/runners.sig`'s and a checkpoint's)."""
    where = f"record {index}"
    lines = chunk.split("\n")
    if not lines[0]:
        raise invalid(source, where, "starts with a blank line", "one blank line between records")
    if ARMOR_BEGIN not in lines:
        layout = f"the statement lines, then {ARMOR_BEGIN}, and one blank line between records"
        raise invalid(source, where, f"has no {ARMOR_BEGIN} line", layout)
    if lines.count(ARMOR_BEGIN) > 1 or lines.count(ARMOR_END) > 1:
        raise invalid(source, where, "has two signature blocks", "one blank line between records")
    if lines[-1] != ARMOR_END:
        raise invalid(source, where, f"does not end with {ARMOR_END}")
    begin = lines.index(ARMOR_BEGIN)
    statement_bytes = "".join(line + "\n" for line in lines[:begin]).encode("utf-8")
    return statement_bytes, "".join(line + "\n" for line in lines[begin:])


def format_record(statement: Statement, armored: str) -> str:
    """A record's text: the statement's lines then the armored block, ending in a newline."""
    return statement.to_bytes().decode("utf-8") + armored.removesuffix("\n") + "\n"


def append_record(path: Path, statement: Statement, armored: str) -> None:
    """Rewrite the approval file atomically with one more record at the end."""
    source = str(path)
    existing = _read_approval_text(path, source)
    before = parse_approval_file(existing, source)
    separator = "\n" if existing else ""
    text = existing + separator + format_record(statement, armored)
    # Re-read what would be written so a malformed armored block never reaches the file.
    after = parse_approval_file(text, source)
    if len(after) != len(before) + 1 or after[-1].statement != statement:
        raise invalid(source, "", "the new record does not read back as one record")
    atomic_write(path, text.encode("utf-8"))


def verify_record(record: SignedRecord, owners: Sequence[Owner], source: str) -> Verdict:
    where = f"record {record.index}"
    try:
        key_blob = verify(record.statement_bytes, record.armored)
    except TrustFailure as failure:
        raise TrustFailure(located(source, where, failure.message)) from None
    principals = principals_for_key(owners, key_blob)
    if not principals:
        problem = f"signed by a key that is not in {OWNERS_FILE} ({public_key_line(key_blob)})"
        raise TrustFailure(located(source, where, problem))
    return Verdict(record, principals)


def find_run_approval(
    records: Sequence[SignedRecord],
    owners: Sequence[Owner],
    goal_id: str,
    sha256: str,
    source: str,
) -> Verdict:
    """The newest owner-signed run decision for exactly these goal file bytes."""
    failures: list[TrustFailure] = []
    for record in reversed(records):
        statement = record.statement
        if (statement.goal, statement.sha256, statement.decision) == (goal_id, sha256, "run"):
            try:
                return verify_record(record, owners, source)
            except TrustFailure as failure:
                failures.append(failure)
    if failures:
        raise failures[0]
    reason = located(source, "", _why_not_approved(records, goal_id, sha256))
    if any(r.statement.goal != goal_id for r in records):
        raise TrustFailure(reason)  # another goal's records here: a mix-up or an attack
    runs = [r for r in records if r.statement.decision == "run"]
    if runs:
        # Edited since it was approved: waiting for re-approval only if that approval was
        # genuinely an owner's (a forged one is refused, whatever bytes it names).
        verify_record(runs[-1], owners, source)
    raise NotApproved(reason)


def _why_not_approved(records: Sequence[SignedRecord], goal_id: str, sha256: str) -> str:
    """The most helpful reason there is no usable run approval, signatures aside."""
    hint = _APPROVE_HINT.format(goal=goal_id)
    others = [r for r in records if r.statement.goal != goal_id]
    if others:  # first: it is why the file is refused, not merely waiting
        newest = others[-1]
        return (
            f"goal {goal_id} is not approved: record {newest.index} is for goal "
            f"{newest.statement.goal}, not {goal_id}; run `{hint}`"
        )
    runs = [r for r in records if r.statement.decision == "run"]
    if runs:
        approved = runs[-1].statement.sha256
        return (
            f"the goal file changed after it was approved (approved sha256 {approved[:12]}…, "
            f"file is {sha256[:12]}…): re-approve with `{hint}`"
        )
    return f"goal {goal_id} is not approved: run `{hint}`"
