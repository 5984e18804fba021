"""The overview page of `harness report --all`: one row per goal, linking its report.

Like each goal's page it is self-contained and deterministic: the same records give the
same bytes (the rows are sorted by goal id, and no time but the events' own is shown).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.events import WAITING
from harness.record.report.cells import badge, tone_of, verify_class
from harness.record.report.collect import Collector
from harness.record.report.fmt import FORMATS, plural
from harness.record.report.page import END, head
from harness.record.report.safe import Html, href, html, join, page_bytes


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
    body = join(_row(row) for row in sorted(rows, key=lambda r: r.goal_id))
    heads = join(html('<th scope="col">{}</th>', name) for name in _HEADINGS)
    waiting = sum(1 for row in rows if row.status in WAITING)
    return page_bytes(
        [
            head("goal-harness: every goal"),
            html(
                '<header id="summary">\n<p class="kicker">goal-harness overview</p>\n'
                "<h1>{}</h1>\n"
                '<p class="{}">{}</p>\n'
                "<p>{} waiting for a human.</p>\n</header>\n"
                '<section id="goals">\n<table class="entries">\n'
                "<thead><tr>{}</tr></thead>\n<tbody>\n{}</tbody>\n</table>\n</section>\n"
                "<footer>\n<p>Rendered from each goal's ledger by <code>harness report --all</code>; "
                "the same ledgers always give the same pages.</p>\n</footer>\n",
                plural(len(rows), "goal"),
                verify_class(note),
                note,
                plural(waiting, "goal"),
                heads,
                body,
            ),
            END,
        ]
    )


def _row(row: GoalRow) -> Html:
    name = html("<code>{}</code>", row.goal_id)
    link = html('<a href="{}">{}</a>', href(row.href), name) if row.href else name
    if row.problem:
        return html(
            '<tr class="goal goal-failed" id="goal-{}"><td>{}</td>'
            "<td>{}</td>"
            '<td colspan="4"><span class="text">{}</span></td></tr>\n',
            row.goal_id,
            link,
            badge("unreadable", "fail"),
            row.problem,
        )
    gate = html("{}", row.gate) if row.gate else html('<span class="muted">-</span>')
    return html(
        '<tr class="goal" id="goal-{id}"><td>{link}</td>'
        "<td>{badge}</td><td>{gate}</td>"
        "<td>{since}</td><td>{spend}</td>"
        '<td><span title="{ts}">{ts}</span> '
        '<span class="text">{event}</span></td></tr>\n',
        id=row.goal_id,
        link=link,
        badge=badge(row.status, tone_of(row.status)),
        gate=gate,
        since=row.waiting_since,
        spend=row.spend,
        ts=row.last_ts,
        event=row.last_event,
    )
