"""The gates the goal stopped at, and the signed decisions and approvals that moved it on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from harness.record.report.cells import badge, heading_cells, seq_cells, tone_of
from harness.record.report.collect import Collector
from harness.record.report.fmt import plural
from harness.record.report.model import Decision, Gate, Window
from harness.record.report.safe import esc

T = TypeVar("T")


def _entries(window: Window[T], render: Callable[[T], str], what: str, columns: int) -> str:
    rows = [render(item) for item in window.head]
    if window.folded:
        rows.append(
            f'<tr class="folded"><td colspan="{columns}">'
            f"… {plural(window.folded, what)} folded here</td></tr>\n"
        )
    rows += [render(item) for item in window.tail]
    if not window.count:
        rows.append(f'<tr><td colspan="{columns}" class="muted">none</td></tr>\n')
    return "".join(rows)


def _table(section: str, title: str, headings: tuple[str, ...], rows: str) -> str:
    heads = heading_cells(headings)
    return (
        f'<section id="{section}">\n<h2>{title}</h2>\n<table class="entries">\n'
        f"<thead><tr>{heads}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n</section>\n"
    )


_GATE_HEADINGS = ("seq", "time", "iteration", "status", "reason", "evidence", "outcome")


def gates_section(page: Collector) -> str:
    rows = _entries(page.gates, _gate_row, "gate", len(_GATE_HEADINGS))
    return _table("gates", "Gates", _GATE_HEADINGS, rows)


def _gate_row(gate: Gate) -> str:
    outcome = badge("open", tone_of(gate.status)) if gate.outcome == "open" else esc(gate.outcome)
    return (
        f'<tr class="gate gate-{esc(gate.status)}">{seq_cells(gate.seq, None, gate.ts)}'
        f'<td class="num">{gate.iteration:,}</td><td>{badge(gate.status, tone_of(gate.status))}</td>'
        f'<td><code class="reason">{esc(gate.reason)}</code></td>'
        f'<td><span class="text">{esc(gate.detail)}</span></td><td>{outcome}</td></tr>\n'
    )


_DECISION_HEADINGS = ("seq", "time", "decision", "signed by", "bound to", "crossed gate")


def decisions_section(page: Collector) -> str:
    rows = _entries(page.decisions, _decision_row, "decision", len(_DECISION_HEADINGS))
    return _table("decisions", "Signed decisions and approvals", _DECISION_HEADINGS, rows)


def _decision_row(d: Decision) -> str:
    kind = "run" if d.decision.startswith("run ") else d.decision.split(" ")[0]
    signers = "".join(f'<li class="signer">{esc(s)}</li>' for s in d.signers)
    signed = (
        f'<ul class="signers">{signers}</ul>'
        if signers
        else '<span class="muted">none recorded</span>'
    )
    bound = (
        "".join(
            f'<div><span class="muted">{esc(name)}</span> <code class="wrap">{esc(value)}</code></div>'
            for name, value in d.bound
        )
        or '<span class="muted">not recorded</span>'
    )
    crossed = f"<code>{esc(d.crossed)}</code>" if d.crossed else '<span class="muted">-</span>'
    return (
        f'<tr class="decision decision-{esc(kind)}">{seq_cells(d.seq, None, d.ts)}'
        f"<td>{esc(d.decision)}</td><td>{signed}</td><td>{bound}</td><td>{crossed}</td></tr>\n"
    )


_RUN_HEADINGS = ("run", "started", "outcome", "cost", "agent seconds", "turns")


def runs_section(page: Collector) -> str:
    """A recurring goal's runs with their outcome and spend; nothing for a one-shot goal."""
    runs = page.runs
    if not runs.rows:
        return ""
    rows = "".join(
        f'<tr class="run"><td class="num">{r.run:,}</td><td>{esc(r.started)}</td>'
        f'<td>{esc(r.outcome)}</td><td class="num">${r.cost_usd:.2f}</td>'
        f'<td class="num">{r.seconds:.1f}</td><td class="num">{r.turns:,}</td></tr>\n'
        for r in runs.rows
    )
    shown = len(runs.rows)
    title = "Runs" if shown == runs.count else f"Runs (the last {shown} of {runs.count})"
    return _table("runs", title, _RUN_HEADINGS, rows)
