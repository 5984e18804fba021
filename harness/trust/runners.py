"""The runners: `.harness/runners`, the keys whose checkpoint signatures a clone trusts.

The file is in git's `allowed_signers` format, as `.harness/owners` is, so `ssh-keygen -Y
verify -f .harness/runners -n goal-harness-checkpoint` reads it too. It counts only with
an owner's signature over its exact bytes: `.harness/runners.sig` holds records (the
statement's lines, then the armored SSHSIG block, namespace `harness`, one blank line
between records) of this statement:

    harness-runners v1
    sha256 <hex of .harness/runners as git stores it>

signed by a key of `.harness/owners` on the same control commit. Any edit of the file
voids the signature, as an edit of a goal file voids its approval (trust.md, "Runner keys
and signed checkpoints").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from harness.errors import InvalidInput, TrustFailure, invalid, located
from harness.store.fsutil import atomic_write
from harness.trust.approvals import record_chunks, split_record
from harness.trust.owners import OWNERS_FILE, Owner, parse_owners, principals_for_key
from harness.trust.sshsig import verify
from harness.trust.sshwire import public_key_line

RUNNERS_PATH = ".harness/runners"
RUNNERS_SIG_PATH = ".harness/runners.sig"
HEADER = "harness-runners v1"
_STATEMENT = re.compile(rf"{re.escape(HEADER)}\nsha256 ([0-9a-f]{{64}})\n")
SIGN_HINT = "`harness runners sign --key OWNER_KEY`"


def statement_bytes(runners: bytes) -> bytes:
    """What an owner signs to list the runners of exactly these bytes."""
    return f"{HEADER}\nsha256 {hashlib.sha256(runners).hexdigest()}\n".encode()


def signed_records(text: str, source: str) -> list[tuple[int, str, bytes, str]]:
    """(index, sha256, statement bytes, armored) for each record of `.harness/runners.sig`."""
    if not text:
        return []
    if not text.endswith("\n"):
        raise invalid(
            source, "", "does not end with a newline", "records, each ending in a newline"
        )
    found = []
    for index, chunk in record_chunks(text):
        statement, armored = split_record(chunk, index, source)
        match = _STATEMENT.fullmatch(statement.decode("utf-8", "replace"))
        if match is None:
            expected = f"{HEADER!r} then 'sha256 <64 hex digits>'"
            raise invalid(source, f"record {index}", "statement is not valid", expected)
        found.append((index, match.group(1), statement, armored))
    return found


def check_runners(
    runners: bytes, signatures: bytes | None, owners: Sequence[Owner]
) -> tuple[Owner, ...]:
    """The listed runners, when an owner signed exactly these bytes; else TrustFailure."""
    try:
        listed = parse_owners(runners.decode("utf-8", "replace"), RUNNERS_PATH)
        records = signed_records((signatures or b"").decode("utf-8", "replace"), RUNNERS_SIG_PATH)
    except InvalidInput as exc:
        raise TrustFailure(f"{exc}; no runner's record can be verified until it is fixed") from None
    sha = hashlib.sha256(runners).hexdigest()
    failures = []
    for index, signed_sha, statement, armored in reversed(records):
        if signed_sha != sha:
            continue
        try:
            key = verify(statement, armored)
        except TrustFailure as failure:
            failures.append(located(RUNNERS_SIG_PATH, f"record {index}", failure.message))
            continue
        if principals_for_key(owners, key):
            return listed
        failures.append(
            located(
                RUNNERS_SIG_PATH,
                f"record {index}",
                f"signed by a key that is not in {OWNERS_FILE} ({public_key_line(key)})",
            )
        )
    why = failures[0] if failures else f"no owner has signed its bytes (sha256 {sha[:12]}…)"
    raise TrustFailure(
        f"{RUNNERS_PATH}: not signed by an owner: {why}; an owner signs it with {SIGN_HINT} "
        "and commits both files"
    )


def append_signature(path: Path, statement: bytes, armored: str) -> None:
    """Add one record to `.harness/runners.sig` (atomically; the file is made if missing)."""
    source = RUNNERS_SIG_PATH
    try:
        existing = path.read_text("utf-8")
    except FileNotFoundError:
        existing = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise invalid(source, "", f"cannot be read ({exc})") from None
    before = signed_records(existing, source)
    text = existing + ("\n" if existing else "") + statement.decode() + armored
    if len(signed_records(text, source)) != len(before) + 1:
        raise invalid(source, "", "the new record does not read back as one record")
    atomic_write(path, text.encode("utf-8"))
