"""The page: its head, summary header and footer around the sections, and `render_html`.

The Content-Security-Policy forbids loading or running anything, in case escaping is ever
wrong; the page holds no time but the events' own, so the same ledger gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.record.cell import Cell
from harness.record.ledger import Record
from harness.record.report.budget import budget_section
from harness.record.report.cells import badge, tone_of
from harness.record.report.collect import Collector
from harness.record.report.fmt import plural
from harness.record.report.gates import decisions_section, gates_section, runs_section
from harness.record.report.review import changes_section, decision_section, objective_section
from harness.record.report.safe import cut, esc
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
    parts = [
        head(f"goal {goal_id} · goal-harness report"),
        _header(page, goal_id, verify_note),
        objective_section(page.evidence),
        decision_section(page.evidence, page.cell),
        changes_section(page.evidence),
        budget_section(page),
        runs_section(page),
        timeline_section(page, goal_id),
        gates_section(page),
        decisions_section(page),
        _footer(page, goal_id),
        "</main>\n</body>\n</html>\n",
    ]
    return "".join(parts).encode("utf-8")


def head(title: str) -> str:
    """The page's head: nothing may load or run; the stylesheet inline."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # Nothing may load or run, even if some text ever escaped its escaping.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
    )


def _fact(name: str, value_html: str) -> str:
    return f'<tr><th scope="row">{esc(name)}</th><td>{value_html}</td></tr>\n'


def _gate_fact(cell: Cell) -> str:
    if cell.gate is None:
        return '<span class="muted">none</span>'
    detail = f' <span class="text">{esc(cut(cell.gate_detail or ""))}</span>'
    return f"{badge(cell.gate, tone_of(cell.status))}{detail}"


def _header(page: Collector, goal_id: str, verify_note: str) -> str:
    cell = page.cell
    approvers = ", ".join(page.approvers)
    facts = [
        _fact("status", badge(cell.status, tone_of(cell.status))),
        _fact("gate", _gate_fact(cell)),
        _fact("next step", f"{esc(cell.step or 'none')} · iteration {cell.iteration:,}"),
        _fact("failing test", f'<code class="wrap">{esc(cell.failing_test or "-")}</code>'),
        _fact("containment", f'<span id="containment">{esc(_containment(page))}</span>'),
        *([_fact("owner rules", _rules_fact(cell))] if cell.rule_counts else []),
        _fact("approved by", f'<span id="approvers">{esc(approvers or "-")}</span>'),
        _fact("goal sha256", f'<code class="wrap">{esc(cell.goal_sha256 or "-")}</code>'),
        _fact("ledger", _ledger_fact(page)),
    ]
    return (
        '<header id="summary">\n<p class="kicker">goal-harness report</p>\n'
        f"<h1>Goal <code>{esc(goal_id)}</code></h1>\n"
        f'<p class="verify">{esc(verify_note)}</p>\n'
        f'<table class="facts">\n{"".join(facts)}</table>\n</header>\n'
    )


def _containment(page: Collector) -> str:
    return page.containment.text() or "no step yet"


def _rules_fact(cell: Cell) -> str:
    """Each owner rule's hits and warned counts: a rule's false alarms before it blocks."""
    rows = (
        f'<code>{esc(c.rule)}</code> hits <span class="num">{c.hits:,}</span> warned '
        f'<span class="num">{c.warned:,}</span>'
        for c in cell.rule_counts or ()
    )
    return f'<span id="rules">{"<br>".join(rows)}</span>'


def _ledger_fact(page: Collector) -> str:
    span = f" · {esc(page.first_ts)} → {esc(page.last_ts)}" if page.events else ""
    head = esc(str(page.cell.position))
    return f'{plural(page.events, "event")}{span}<br><code class="wrap small">head {head}</code>'


def _footer(page: Collector, goal_id: str) -> str:
    return (
        "<footer>\n<p>Rendered from the ledger alone by "
        f"<code>harness replay {esc(goal_id)} --format html</code>: "
        f"{plural(page.events, 'event')}; the same ledger always gives the same page.</p>\n"
        "</footer>\n"
    )
