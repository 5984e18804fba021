"""Reading a goal's record where the secret is not: in a clone without it (a laptop).

Every line's shape, sequence and hash chain are checked as always; the MACs cannot be, so
whatever is shown from it is marked "no secret here: not checked". Anyone can rewrite a
whole chain without the secret; only a runner (which has it) can tell, and it does before
it acts on anything (remote.md, "Acting from any clone").
"""

from __future__ import annotations

from pathlib import Path

from harness.record.ledger import Ledger, Record

UNVERIFIED = "no secret here: not checked"


class UnverifiedLedger(Ledger):
    """A Ledger read without the key: chain and sequence checked, MACs not."""

    def __init__(self, folder: Path, goal_id: str) -> None:
        super().__init__(folder, goal_id, b"")

    def _accept(
        self, line: bytes, name: str, line_no: int, seq: int, digest: str, end: int
    ) -> Record | None:
        return None  # the fast path checks the MAC first; every line takes _verify

    def _check_mac(self, body: bytes, mac: bytes, path: Path, line_no: int) -> None:
        return None  # no key here: shape, sequence and chain are still checked (_verify)
