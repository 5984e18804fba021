"""What a reviewer needs next to the record: a bounded diff, an output tail, and the
command that signs the decision the goal waits for (report.md, the HTML report, the step
summary; docs/guide/reading-the-report.md).

Everything here is a pure function of recorded data, so a live render and a replay give
the same bytes.
"""

from __future__ import annotations

import json

from harness.record.cell import Cell
from harness.record.events import WAITING

DIFF_BYTES = 8000  # of one build's diff as JSON, kept in its step.finished
SHOWN_DIFF_CHARS = 3000  # of that, in report.md and the HTML report
TAIL_LINES = 30  # of a judge's, review's or ship step's output, in the reports
SHIP_GATES = ("ship", "ship_outcome_unknown", "ship_failed")
EXTEND_GATES = ("budget_exhausted", "max_passes")
# Gates where a build is next once crossed: a spent budget needs raising in the same decision.
BUILD_NEXT_GATES = ("no_progress", "agent_unavailable")


def head_of(text: str, limit: int, rest: str) -> str:
    """The first whole lines of `text` within `limit` characters, and a note naming `rest`
    (the command that shows all) when lines were left out."""
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0]
    left = text.count("\n", len(kept)) + (0 if text.endswith("\n") else 1)
    return f"{kept}\n… {left:,} more lines: {rest}\n"


def fit_head(text: str, limit_bytes: int, rest: str) -> str:
    """`head_of` cut until its JSON form (as the ledger stores it) fits `limit_bytes`."""
    chars = limit_bytes
    while True:
        kept = head_of(text, chars, rest)
        if len(json.dumps(kept).encode()) <= limit_bytes or chars < 200:
            return kept
        chars //= 2


def tail_of(text: str | None, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of an output tail (the record already bounds its size)."""
    if not text:
        return ""
    kept = text.rstrip("\n").split("\n")  # not splitlines: U+2028 and the like stay escaped
    if len(kept) <= lines:
        return "\n".join(kept)
    return f"[… {len(kept) - lines:,} lines before]\n" + "\n".join(kept[-lines:])


def diff_command(goal_id: str, iteration: int | None = None) -> str:
    shown = f"harness diff {goal_id}"
    return f"{shown} --iteration {iteration}" if iteration is not None else shown


def sign_command(cell: Cell, goal_id: str) -> str | None:
    """The command an owner types to move the waiting goal on; None when it is not waiting."""
    gate = cell.gate
    if cell.status not in WAITING or gate is None:
        return None
    key = "--key <owner key>"
    if gate in SHIP_GATES:
        return f"harness ship {goal_id} {key}"
    if gate in EXTEND_GATES or (gate in BUILD_NEXT_GATES and cell.exhausted()):
        return f"harness unpark {goal_id} {key} --extend-budget iterations=N"
    return f"harness unpark {goal_id} {key}"


def binds(cell: Cell) -> list[tuple[str, str]]:
    """What a signature made now is bound to (`trust/statement.py`)."""
    return [
        ("goal sha256", cell.goal_sha256 or "-"),
        ("commit", cell.gate_commit or "-"),
        ("ledger head", str(cell.position)),
    ]
