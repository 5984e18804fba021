"""Reading a goal's record where the secret is not: in a clone without it (a laptop).

Every line's shape, sequence and hash chain are checked as always; the MACs cannot be, so
whatever is shown from it is marked "no secret here: not checked". Anyone can rewrite a
whole chain without the secret; only a runner (which has it) can tell, and it does before
it acts on anything (remote.md, "Acting from any clone").
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.record.ledger import (
    _HEAD,
    _MAC_OPEN,
    _TAIL,
    _TRAILER,
    Ledger,
    LedgerBroken,
    Position,
    Record,
)

UNVERIFIED = "no secret here: not checked"


class UnverifiedLedger(Ledger):
    """A Ledger read without the key: chain and sequence checked, MACs not."""

    def __init__(self, folder: Path, goal_id: str) -> None:
        super().__init__(folder, goal_id, b"")

    def _accept(
        self, line: bytes, name: str, line_no: int, seq: int, digest: str, end: int
    ) -> Record | None:
        return None  # the fast path checks the MAC first; every line takes _verify

    def _verify(self, line: bytes, path: Path, line_no: int, prev: Position, end: int) -> Record:
        if not (
            line.startswith(_HEAD)
            and line[-_TRAILER:].startswith(_MAC_OPEN)
            and line.endswith(_TAIL)
        ):
            raise LedgerBroken(path, line_no, "not a ledger line")
        event = self._parse(line[len(_HEAD) : -_TRAILER], path, line_no)
        if event.seq != prev.seq + 1:
            raise LedgerBroken(path, line_no, f"sequence {event.seq} follows {prev.seq}")
        if event.prev != prev.hash:
            raise LedgerBroken(path, line_no, "chain broken: prev does not match", event.seq)
        return Record(event, hashlib.sha256(line).hexdigest(), path.name, line_no, end)
