"""The gates the goal stopped at, and the signed decisions and approvals that moved it on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from harness.record.report.cells import badge, heading_cells, seq_cells, tone_of
from harness.record.report.collect import Collector
from harness.record.report.fmt import plural
from harness.record.report.model import Decision, Gate, Window
from harness.record.report.safe import EMPTY, Html, esc, html, join

T = TypeVar("T")


def _entries(window: Window[T], render: Callable[[T], Html], what: str, columns: int) -> Html:
    rows = [render(item) for item in window.head]
    if window.folded:
        rows.append(
            html(
                '<tr class="folded"><td colspan="{}">… {} folded here</td></tr>\n',
                columns,
                plural(window.folded, what),
            )
        )
    rows += [render(item) for item in window.tail]
    if not window.count:
        rows.append(html('<tr><td colspan="{}" class="muted">none</td></tr>\n', columns))
    return join(rows)


def _table(section: str, title: str, headings: tuple[str, ...], rows: Html) -> Html:
    return html(
        '<section id="{}">\n<h2>{}</h2>\n<table class="entries">\n'
        "<thead><tr>{}</tr></thead>\n<tbody>\n{}</tbody>\n</table>\n</section>\n",
        section,
        title,
        heading_cells(headings),
        rows,
    )


_GATE_HEADINGS = ("seq", "time", "iteration", "status", "reason", "evidence", "outcome")


def gates_section(page: Collector) -> Html:
    rows = _entries(page.gates, _gate_row, "gate", len(_GATE_HEADINGS))
    return _table("gates", "Gates", _GATE_HEADINGS, rows)


def _gate_row(gate: Gate) -> Html:
    outcome = badge("open", tone_of(gate.status)) if gate.outcome == "open" else esc(gate.outcome)
    return html(
        '<tr class="gate gate-{status}">{seq}'
        '<td class="num">{iteration:,}</td><td>{badge}</td>'
        '<td><code class="reason">{reason}</code></td>'
        '<td><span class="text">{detail}</span></td><td>{outcome}</td></tr>\n',
        status=gate.status,
        seq=seq_cells(gate.seq, None, gate.ts),
        iteration=gate.iteration,
        badge=badge(gate.status, tone_of(gate.status)),
        reason=gate.reason,
        detail=gate.detail,
        outcome=outcome,
    )


_DECISION_HEADINGS = ("seq", "time", "decision", "signed by", "bound to", "crossed gate")


def decisions_section(page: Collector) -> Html:
    rows = _entries(page.decisions, _decision_row, "decision", len(_DECISION_HEADINGS))
    return _table("decisions", "Signed decisions and approvals", _DECISION_HEADINGS, rows)


def _decision_row(d: Decision) -> Html:
    kind = "run" if d.decision.startswith("run ") else d.decision.split(" ")[0]
    signers = join(html('<li class="signer">{}</li>', s) for s in d.signers)
    signed = (
        html('<ul class="signers">{}</ul>', signers)
        if signers
        else html('<span class="muted">none recorded</span>')
    )
    bound = join(
        html('<div><span class="muted">{}</span> <code class="wrap">{}</code></div>', name, value)
        for name, value in d.bound
    ) or html('<span class="muted">not recorded</span>')
    crossed = (
        html("<code>{}</code>", d.crossed) if d.crossed else html('<span class="muted">-</span>')
    )
    return html(
        '<tr class="decision decision-{}">{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n',
        kind,
        seq_cells(d.seq, None, d.ts),
        d.decision,
        signed,
        bound,
        crossed,
    )


_RUN_HEADINGS = ("run", "started", "outcome", "cost", "agent seconds", "turns")


def runs_section(page: Collector) -> Html:
    """A recurring goal's runs with their outcome and spend; nothing for a one-shot goal."""
    runs = page.runs
    if not runs.rows:
        return EMPTY
    rows = join(
        html(
            '<tr class="run"><td class="num">{:,}</td><td>{}</td>'
            '<td>{}</td><td class="num">${:.2f}</td>'
            '<td class="num">{:.1f}</td><td class="num">{:,}</td></tr>\n',
            r.run,
            r.started,
            r.outcome,
            r.cost_usd,
            r.seconds,
            r.turns,
        )
        for r in runs.rows
    )
    shown = len(runs.rows)
    title = "Runs" if shown == runs.count else f"Runs (the last {shown} of {runs.count})"
    return _table("runs", title, _RUN_HEADINGS, rows)
