"""Signed checkpoints: a runner's SSH signature over each checkpoint commit's record.

The HMAC cell is the runner's attestation, and only a holder of the secret can check it.
At every checkpoint the runner also signs, with its own key (`runnerkey.py`), this
statement, and commits it as `ledger/<id>/checkpoint.sig` (the statement's lines, then the
armored SSHSIG block, namespace `goal-harness-checkpoint`):

    goal-harness-checkpoint v1
    goal <id>
    ledger <seq>:<hash of the last event>
    cell <sha256 of state.json's bytes>
    tree <the work tree id: the commit's tree without ledger/>

Anyone with the repository checks it without a secret: the signer must be listed in the
owner-signed `.harness/runners` (`runners.py`), the cell's bytes must hash to `cell`, the
ledger's last line must be `ledger` (its chain binds every line before it), and the goal
branch's tree must be `tree`. `ssh-keygen -Y verify -f .harness/runners -I <runner> -n
goal-harness-checkpoint -s <signature> < <statement>` checks the same signature
(docs/specs/trust.md, "Runner keys and signed checkpoints").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass

from harness.errors import InvalidInput, TrustFailure
from harness.record.position import Position
from harness.trust.approvals import split_record
from harness.trust.owners import Owner, principals_for_key
from harness.trust.runnerkey import RunnerKey, fingerprint
from harness.trust.runners import RUNNERS_PATH
from harness.trust.sshsig import signer_blob, verify
from harness.trust.sshwire import public_key_line

NAMESPACE = "goal-harness-checkpoint"
HEADER = "goal-harness-checkpoint v1"
FILE_NAME = "checkpoint.sig"
_HEX = "[0-9a-f]{64}"
_STATEMENT = re.compile(
    rf"{re.escape(HEADER)}\ngoal ([a-z0-9][a-z0-9-]{{0,62}})\nledger ([1-9][0-9]*):({_HEX})\n"
    rf"cell ({_HEX})\ntree ([0-9a-f]{{40}}|{_HEX})\n"
)
_LAYOUT = f"{HEADER!r}, goal, ledger, cell and tree lines, then the armored signature"


@dataclass(frozen=True)
class Checkpoint:
    """What a runner signs at a checkpoint."""

    goal: str
    head: Position
    cell_sha256: str
    tree: str

    def to_bytes(self) -> bytes:
        return (
            f"{HEADER}\ngoal {self.goal}\nledger {self.head.seq}:{self.head.hash}\n"
            f"cell {self.cell_sha256}\ntree {self.tree}\n"
        ).encode()


@dataclass(frozen=True)
class Vouched:
    """A checkpoint whose signature verified, and the runner who made it."""

    checkpoint: Checkpoint
    runners: tuple[str, ...]  # the principals `.harness/runners` lists for the key
    fingerprint: str

    @property
    def text(self) -> str:
        return f"verified by runner {', '.join(self.runners)} ({self.fingerprint})"


def signed_checkpoint(
    key: RunnerKey, goal_id: str, head: Position, cell_bytes: bytes, tree: str
) -> bytes:
    """The bytes of `checkpoint.sig` for a cell just written at `head`."""
    cell_sha = hashlib.sha256(cell_bytes).hexdigest()
    statement = Checkpoint(goal_id, head, cell_sha, tree).to_bytes()
    return statement + key.sign(statement, NAMESPACE).encode()


def parse_checkpoint(data: bytes, source: str) -> tuple[Checkpoint, bytes, str]:
    """(the checkpoint, its statement bytes, the armored block) of a `checkpoint.sig`."""
    try:
        text = data.decode("utf-8")
        if not text.endswith("\n") or "\n\n" in text:
            raise InvalidInput(f"{source}: is not one record (expected {_LAYOUT})")
        statement, armored = split_record(text[:-1], 1, source)
    except (UnicodeDecodeError, InvalidInput):
        raise TrustFailure(f"{source}: malformed (expected {_LAYOUT})") from None
    match = _STATEMENT.fullmatch(statement.decode())
    if match is None:
        raise TrustFailure(f"{source}: the statement is malformed (expected {_LAYOUT})")
    goal, seq, head_hash, cell_sha, tree = match.groups()
    return Checkpoint(goal, Position(int(seq), head_hash), cell_sha, tree), statement, armored


def signed_by_one_of(cell_bytes: bytes, signature: bytes | None, keys: Set[bytes]) -> bool:
    """Whether `signature` names one of `keys` (public blobs: the listed runners') as its
    signer over exactly `cell_bytes`. For a runner's own record, read without a
    cryptographic check (the cell's MAC is what the runner trusts): a head not signed so
    is signed at a listed runner's next pass (`harness run`), once."""
    if signature is None:
        return False
    try:
        checkpoint, _, armored = parse_checkpoint(signature, FILE_NAME)
    except TrustFailure:
        return False
    same_cell = checkpoint.cell_sha256 == hashlib.sha256(cell_bytes).hexdigest()
    return same_cell and signer_blob(armored) in keys


def vouch(
    goal_id: str,
    cell_bytes: bytes,
    signature: bytes | None,
    runners: Sequence[Owner],
    head: Position | None = None,
) -> Vouched:
    """The runner who signed this goal's record, or TrustFailure naming what does not hold.

    `head`: the ledger's last event as read (None where only the cell is read, as `status`
    does; the cell names its position and its bytes are signed)."""
    source = f"ledger/{goal_id}/{FILE_NAME}"
    if signature is None:
        raise TrustFailure(
            f"{source}: missing: the record's head is not signed by a runner (a record made "
            "before signed checkpoints, or by a machine without a runner key, is signed at "
            "its next checkpoint by a runner listed in .harness/runners)"
        )
    checkpoint, statement, armored = parse_checkpoint(signature, source)
    try:
        key = verify(statement, armored, NAMESPACE)
    except TrustFailure as failure:
        raise TrustFailure(f"{source}: {failure.message}") from None
    names = principals_for_key(runners, key, NAMESPACE)
    if not names:
        raise TrustFailure(
            f"{source}: signed by a key that is not in {RUNNERS_PATH} "
            f"({fingerprint(key)}, {public_key_line(key)}): not a listed runner's record"
        )
    if checkpoint.goal != goal_id:
        raise TrustFailure(f"{source}: signed for goal {checkpoint.goal}, not {goal_id}")
    if hashlib.sha256(cell_bytes).hexdigest() != checkpoint.cell_sha256:
        raise TrustFailure(
            f"ledger/{goal_id}/state.json: not the cell runner {names[0]} signed at event "
            f"{checkpoint.head.seq}: the cell was edited or replaced"
        )
    if head is not None and head != checkpoint.head:
        raise TrustFailure(
            f"ledger/{goal_id}: the ledger ends at event {head.seq} ({head.hash[:16]}), not at "
            f"event {checkpoint.head.seq} ({checkpoint.head.hash[:16]}) that runner {names[0]} "
            "signed: a line was added, edited or removed"
        )
    return Vouched(checkpoint, names, fingerprint(key))
