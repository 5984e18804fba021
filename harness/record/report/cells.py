"""What every section draws the same way: status tones, badges, headings, seq and time."""

from __future__ import annotations

from harness.record.report.fmt import clock
from harness.record.report.safe import esc

_TONES = {
    "completed": "pass",
    "parked_at_eyes": "warn",
    "needs_attention": "fail",
    "failed": "fail",
    "running": "info",
}


def tone_of(status: str) -> str:
    return _TONES.get(status, "neutral")


def badge(label: str, tone: str) -> str:
    return f'<span class="badge tone-{tone}">{esc(label)}</span>'


_NUMERIC = frozenset({"seq", "duration", "cost", "turns", "iteration"})


def heading_cells(headings: tuple[str, ...]) -> str:
    numeric = ' class="num"'
    return "".join(
        f'<th scope="col"{numeric if name in _NUMERIC else ""}>{name}</th>' for name in headings
    )


def seq_cells(first: int, last: int | None, ts: str) -> str:
    seq = f"{first:,}" if last is None or last == first else f"{first:,}–{last:,}"
    return f'<td class="num">{seq}</td><td><span title="{esc(ts)}">{esc(clock(ts))}</span></td>'
