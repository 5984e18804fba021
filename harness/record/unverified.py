"""Reading a goal's record where the secret is not: in a clone without it (a laptop).

Every line's shape, sequence and hash chain are checked as always; the MACs cannot be, so
whatever is shown from it is marked "no secret here: not checked". Anyone can rewrite a
whole chain without the secret; only a runner (which has it) can tell, and it does before
it acts on anything (remote.md, "Acting from any clone").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from harness.errors import TrustFailure
from harness.record.ledger import Ledger, Record
from harness.record.position import Position

_TAIL_BYTES = 128 * 1024  # more than one event's line (its data is at most 64 KiB)

UNVERIFIED = "no secret here: not checked"
MACS_UNCHECKED = "no secret here: MACs not checked"


class UnverifiedLedger(Ledger):
    """A Ledger read without the key: chain and sequence checked, MACs not."""

    def __init__(
        self,
        folder: Path,
        goal_id: str,
        signed: Position | None = None,
        signer: str = "",
        tree: str = "",
    ) -> None:
        super().__init__(folder, goal_id, b"")
        # The head a listed runner signed (trust/checkpoint.py), who (`verified by …`), and
        # the work tree it signed with it.
        self.signed, self.signer, self.tree = signed, signer, tree

    def records(self) -> Iterator[Record]:
        yield from super().records()
        if self.signed is not None and self.head != self.signed:
            raise TrustFailure(
                f"ledger/{self.goal_id}: the chain read ends at event {self.head.seq}, not at "
                f"event {self.signed.seq} that the runner signed"
            )

    def _mac_matches(self, body: bytes, mac: bytes) -> bool:
        return True  # no key here: the fast path checks everything else, as _verify does

    def _check_mac(self, body: bytes, mac: bytes, path: Path, line_no: int) -> None:
        return None  # no key here: shape, sequence and chain are still checked (_verify)


def last_line_position(folder: Path) -> Position | None:
    """The sequence number and line hash of the ledger's last whole line (what a runner's
    checkpoint signature names), read from the end of the last segment alone; None where
    there is no line. Its chain to the first line is checked as the ledger is read."""
    segments = sorted(p for p in folder.glob("*.jsonl")) if folder.is_dir() else []
    if not segments:
        return None
    with segments[-1].open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    whole = tail[: tail.rfind(b"\n") + 1]
    line = whole[whole.rfind(b"\n", 0, len(whole) - 1) + 1 :]
    if not line or (len(line) == len(tail) and size > len(tail)):
        return None  # no whole line in the tail read: not a line the harness wrote
    try:
        seq = json.loads(line)["e"]["seq"]
    except (ValueError, KeyError, TypeError):
        return None
    return Position(seq, hashlib.sha256(line).hexdigest()) if isinstance(seq, int) else None
