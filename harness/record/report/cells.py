"""What every section draws the same way: status tones, badges, headings, seq and time."""

from __future__ import annotations

from harness.record.report.fmt import clock
from harness.record.report.safe import Html, html, join

_TONES = {
    "completed": "pass",
    "parked_at_eyes": "warn",
    "needs_attention": "fail",
    "failed": "fail",
    "running": "info",
}


def tone_of(status: str) -> str:
    return _TONES.get(status, "neutral")


def badge(label: str, tone: str) -> Html:
    return html('<span class="badge tone-{}">{}</span>', tone, label)


_NUMERIC = frozenset({"seq", "duration", "cost", "turns", "iteration"})


def heading_cells(headings: tuple[str, ...]) -> Html:
    return join(
        html('<th scope="col" class="num">{}</th>', name)
        if name in _NUMERIC
        else html('<th scope="col">{}</th>', name)
        for name in headings
    )


def seq_cells(first: int, last: int | None, ts: str) -> Html:
    seq = html("{:,}", first) if last is None or last == first else html("{:,}–{:,}", first, last)
    return html('<td class="num">{}</td><td><span title="{}">{}</span></td>', seq, ts, clock(ts))


def verify_class(note: str) -> str:
    """The verify banner's class: a record read without the secret is shown as a warning,
    never in the colour of a verified one."""
    return "verify unverified" if note.startswith("unverified") else "verify"
