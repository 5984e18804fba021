"""Where a ledger stands (the last event's sequence number and line hash), apart from
`record.ledger` so that reading a cell (every `run` and `status`) does not import the
ledger's reader and writer."""

from __future__ import annotations

from dataclasses import dataclass

GENESIS = "0" * 64


@dataclass(frozen=True)
class Position:
    """Where the ledger stands: the last event's sequence number and line hash."""

    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"


START = Position(0, GENESIS)
