"""The page: its head, summary header and footer around the sections, and `render_html`.

The Content-Security-Policy forbids loading or running anything, in case escaping is ever
wrong; the page holds no time but the events' own, so the same ledger gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.record.cell import Cell
from harness.record.ledger import Record
from harness.record.report.budget import budget_section
from harness.record.report.cells import badge, tone_of, verify_class
from harness.record.report.collect import Collector
from harness.record.report.fmt import plural
from harness.record.report.gates import decisions_section, gates_section, runs_section
from harness.record.report.review import changes_section, decision_section, objective_section
from harness.record.report.safe import EMPTY, Html, cut, html, join, page_bytes
from harness.record.report.style import CSS
from harness.record.report.timeline import timeline_section


def render_html(records: Iterable[Record], goal_id: str, verify_note: str) -> bytes:
    """The whole report page for one goal, from its verified records alone."""
    return render_collected(collect(records, goal_id), goal_id, verify_note)


def collect(records: Iterable[Record], goal_id: str) -> Collector:
    page = Collector(goal_id)
    for record in records:
        page.add(record)
    return page


def render_collected(page: Collector, goal_id: str, verify_note: str) -> bytes:
    return page_bytes(
        [
            head(f"goal {goal_id} · goal-harness report"),
            _header(page, goal_id, verify_note),
            objective_section(page.evidence),
            decision_section(page.evidence, page.cell, page.open_gate),
            changes_section(page.evidence),
            budget_section(page),
            runs_section(page),
            timeline_section(page, goal_id),
            gates_section(page),
            decisions_section(page),
            _footer(page, goal_id),
            END,
        ]
    )


END = Html("</main>\n</body>\n</html>\n")


def head(title: str) -> Html:
    """The page's head: nothing may load or run; the stylesheet inline."""
    return html(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # Nothing may load or run, even if some text ever escaped its escaping.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>{}</title>\n"
        "<style>{}</style>\n</head>\n<body>\n<main>\n",
        title,
        CSS,
    )


def _fact(name: str, value: Html) -> Html:
    return html('<tr><th scope="row">{}</th><td>{}</td></tr>\n', name, value)


def _gate_fact(cell: Cell) -> Html:
    if cell.gate is None:
        return html('<span class="muted">none</span>')
    detail = html(' <span class="text">{}</span>', cut(cell.gate_detail or ""))
    return html("{}{}", badge(cell.gate, tone_of(cell.status)), detail)


def _header(page: Collector, goal_id: str, verify_note: str) -> Html:
    cell = page.cell
    approvers = ", ".join(page.approvers)
    facts = [
        _fact("status", badge(cell.status, tone_of(cell.status))),
        _fact("gate", _gate_fact(cell)),
        _fact("next step", html("{} · iteration {:,}", cell.step or "none", cell.iteration)),
        _fact("failing test", html('<code class="wrap">{}</code>', cell.failing_test or "-")),
        _fact("containment", html('<span id="containment">{}</span>', _containment(page))),
        *([_fact("owner rules", _rules_fact(cell))] if cell.rule_counts else []),
        _fact("approved by", html('<span id="approvers">{}</span>', approvers or "-")),
        _fact("goal sha256", html('<code class="wrap">{}</code>', cell.goal_sha256 or "-")),
        _fact("ledger", _ledger_fact(page)),
    ]
    return html(
        '<header id="summary">\n<p class="kicker">goal-harness report</p>\n'
        "<h1>Goal <code>{}</code></h1>\n"
        '<p class="{}">{}</p>\n'
        '<table class="facts">\n{}</table>\n</header>\n',
        goal_id,
        verify_class(verify_note),
        verify_note,
        join(facts),
    )


def _containment(page: Collector) -> str:
    return page.containment.text() or "no step yet"


def _rules_fact(cell: Cell) -> Html:
    """Each owner rule's hits and warned counts: a rule's false alarms before it blocks."""
    rows = (
        html(
            '<code>{}</code> hits <span class="num">{:,}</span> warned '
            '<span class="num">{:,}</span>',
            c.rule,
            c.hits,
            c.warned,
        )
        for c in cell.rule_counts or ()
    )
    return html('<span id="rules">{}</span>', join(rows, Html("<br>")))


def _ledger_fact(page: Collector) -> Html:
    span = html(" · {} → {}", page.first_ts, page.last_ts) if page.events else EMPTY
    return html(
        '{}{}<br><code class="wrap small">head {}</code>',
        plural(page.events, "event"),
        span,
        str(page.cell.position),
    )


def _footer(page: Collector, goal_id: str) -> Html:
    return html(
        "<footer>\n<p>Rendered from the ledger alone by "
        "<code>harness replay {} --format html</code>: "
        "{}; the same ledger always gives the same page.</p>\n"
        "</footer>\n",
        goal_id,
        plural(page.events, "event"),
    )
