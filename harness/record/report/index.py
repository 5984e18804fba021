"""The overview page of `harness report --all`: one row per goal, linking its report.

Like each goal's page it is self-contained and deterministic: the same records give the
same bytes (the rows are sorted by goal id, and no time but the events' own is shown).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.events import WAITING
from harness.record.report.cells import badge, tone_of
from harness.record.report.collect import Collector
from harness.record.report.fmt import FORMATS, plural
from harness.record.report.page import head
from harness.record.report.safe import esc


@dataclass(frozen=True)
class GoalRow:
    goal_id: str
    href: str | None  # the goal's page, next to the index; None when it could not be read
    status: str
    gate: str
    waiting_since: str
    spend: str
    last_ts: str
    last_event: str
    problem: str = ""


def goal_row(page: Collector, goal_id: str, href: str) -> GoalRow:
    cell = page.cell
    since = page.open_gate.ts if cell.status in WAITING and page.open_gate else ""
    used, limit = cell.used, cell.limit
    spend = " · ".join(
        f"{name} {FORMATS[key](getattr(used, key))} of {FORMATS[key](getattr(limit, key))}"
        for key, name in (("cost_usd", "cost"), ("iterations", "iterations"), ("seconds", "time"))
    )
    return GoalRow(
        goal_id,
        href,
        cell.status,
        cell.gate or "",
        since,
        spend,
        page.last_ts,
        page.last_event,
    )


def failed_row(goal_id: str, problem: str) -> GoalRow:
    return GoalRow(goal_id, None, "unreadable", "", "", "", "", "", problem)


_HEADINGS = ("goal", "status", "gate", "waiting since", "spend against limit", "last event")


def render_index(rows: list[GoalRow], note: str) -> bytes:
    body = "".join(_row(row) for row in sorted(rows, key=lambda r: r.goal_id))
    heads = "".join(f'<th scope="col">{name}</th>' for name in _HEADINGS)
    waiting = sum(1 for row in rows if row.status in WAITING)
    page = (
        head("goal-harness: every goal")
        + '<header id="summary">\n<p class="kicker">goal-harness overview</p>\n'
        f"<h1>{plural(len(rows), 'goal')}</h1>\n"
        f'<p class="verify">{esc(note)}</p>\n'
        f"<p>{plural(waiting, 'goal')} waiting for a human.</p>\n</header>\n"
        '<section id="goals">\n<table class="entries">\n'
        f"<thead><tr>{heads}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n</section>\n"
        "<footer>\n<p>Rendered from each goal's ledger by <code>harness report --all</code>; "
        "the same ledgers always give the same pages.</p>\n</footer>\n"
        "</main>\n</body>\n</html>\n"
    )
    return page.encode("utf-8")


def _row(row: GoalRow) -> str:
    name = f"<code>{esc(row.goal_id)}</code>"
    link = f'<a href="{esc(row.href)}">{name}</a>' if row.href else name
    if row.problem:
        return (
            f'<tr class="goal goal-failed" id="goal-{esc(row.goal_id)}"><td>{link}</td>'
            f"<td>{badge('unreadable', 'fail')}</td>"
            f'<td colspan="4"><span class="text">{esc(row.problem)}</span></td></tr>\n'
        )
    gate = esc(row.gate) if row.gate else '<span class="muted">-</span>'
    return (
        f'<tr class="goal" id="goal-{esc(row.goal_id)}"><td>{link}</td>'
        f"<td>{badge(row.status, tone_of(row.status))}</td><td>{gate}</td>"
        f"<td>{esc(row.waiting_since)}</td><td>{esc(row.spend)}</td>"
        f'<td><span title="{esc(row.last_ts)}">{esc(row.last_ts)}</span> '
        f'<span class="text">{esc(row.last_event)}</span></td></tr>\n'
    )
