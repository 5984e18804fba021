"""The timeline: one table body per iteration, a row per step or mark, the middle folded."""

from __future__ import annotations

from harness.record.cell import Cell
from harness.record.events import TERMINAL, WAITING
from harness.record.report.cells import badge, heading_cells, seq_cells
from harness.record.report.collect import Collector
from harness.record.report.fmt import duration, money, plural
from harness.record.report.model import Iteration, MarkRow, Outcome, Row, StepRow, Window
from harness.record.report.safe import esc

COLUMNS = 9


_HEADINGS = ("seq", "time", "step", "result", "duration", "cost", "turns", "changes", "detail")


def timeline_section(page: Collector, goal_id: str) -> str:
    window = page.iterations
    bodies = [_iteration(group, page.cell) for group in window.head]
    if window.folded:
        bodies.append(_folded_iterations(window, goal_id))
    bodies += [_iteration(group, page.cell) for group in window.tail]
    if not window.count:
        bodies.append(
            f'<tbody><tr><td colspan="{COLUMNS}" class="muted">no steps yet</td></tr></tbody>\n'
        )
    heads = heading_cells(_HEADINGS)
    return (
        '<section id="timeline">\n<h2>Timeline</h2>\n'
        f'<table class="timeline">\n<thead><tr>{heads}</tr></thead>\n{"".join(bodies)}'
        "</table>\n</section>\n"
    )


def _folded_iterations(window: Window[Iteration], goal_id: str) -> str:
    first, last = window.first_folded, window.last_folded
    span = ""
    if first is not None and last is not None:
        span = f" (iterations {first.number:,} to {last.number:,})"
    return (
        f'<tbody class="folded"><tr><td colspan="{COLUMNS}">'
        f"… {plural(window.folded, 'iteration')} folded here{span}. "
        f"<code>harness replay {esc(goal_id)} --format text</code> lists every event."
        "</td></tr></tbody>\n"
    )


def _iteration(group: Iteration, cell: Cell) -> str:
    rows = [_row(row, cell) for row in group.rows.head]
    if group.rows.folded:
        rows.append(
            f'<tr class="folded"><td colspan="{COLUMNS}">'
            f"… {plural(group.rows.folded, 'row')} folded here</td></tr>\n"
        )
    rows += [_row(row, cell) for row in group.rows.tail]
    count = plural(group.rows.count, "entry", "entries")
    return (
        f'<tbody class="iteration" data-iteration="{group.number}">\n'
        f'<tr class="iteration-title"><th colspan="{COLUMNS}" scope="rowgroup">'
        f'Iteration {group.number:,} <span class="muted">· {count}</span></th></tr>\n'
        f"{''.join(rows)}</tbody>\n"
    )


def _row(row: Row, cell: Cell) -> str:
    return _mark_row(row) if isinstance(row, MarkRow) else _step_row(row, cell)


def _step_row(row: StepRow, cell: Cell) -> str:
    done = row.outcome
    classes = f"step step-{esc(row.step)}"
    classes += " step-cutoff" if row.cutoff else ""
    classes += " step-rerun" if row.rerun else ""
    last = done.seq if done else (row.cutoff[0] if row.cutoff else None)
    step = esc(row.step) + (' <span class="tag">re-run</span>' if row.rerun else "")
    return (
        f'<tr class="{classes}">{seq_cells(row.seq, last, row.ts)}<td>{step}</td>'
        f"<td>{_result(row, cell)}</td>{_measures(done)}<td>{_detail(row)}</td></tr>\n"
    )


def _containment(words: str) -> str:
    """How the step was contained, last in its detail; anything but contained stands out."""
    if not words:
        return ""
    kind = "contained" if words.startswith("contained") else "uncontained"
    return f'<span class="containment {kind}">{esc(words)}</span>'


def _result(row: StepRow, cell: Cell) -> str:
    if row.outcome is not None:
        return badge(row.outcome.label, row.outcome.tone)
    if row.cutoff is not None:
        return badge("cut off", "warn")
    current = cell.in_flight is not None and cell.in_flight.call_id == row.call_id
    if current and cell.status not in WAITING | TERMINAL:
        return badge("in flight", "info")
    # Started, never finished, and the goal has stopped: e.g. a cut-off ship step.
    return badge("outcome unknown" if row.step == "ship" else "no result", "warn")


def _measures(done: Outcome | None) -> str:
    if done is None:
        return "<td></td><td></td><td></td><td></td>"
    cost = money(done.cost_usd) if done.cost_usd is not None else ""
    turns = f"{done.turns:,}" if done.turns is not None else ""
    return (
        f'<td class="num">{duration(done.duration_s)}</td><td class="num">{cost}</td>'
        f'<td class="num">{turns}</td><td>{_diffstat(done)}</td>'
    )


def _diffstat(done: Outcome) -> str:
    if done.changed is None:
        return ""
    more = done.changed - len(done.paths)
    paths = "".join(f"<li>{esc(p)}</li>" for p in done.paths)
    extra = f"<li>+{more:,} more</li>" if more > 0 else ""
    listing = f'<ul class="paths">{paths}{extra}</ul>' if done.changed else ""
    return f'<span class="diffstat">{plural(done.changed, "file")}</span>{listing}'


def _detail(row: StepRow) -> str:
    parts = []
    if row.cutoff is not None:
        kept = plural(row.cutoff[1], "changed path")
        parts.append(f"cut off (#{row.cutoff[0]:,}); work in progress kept: {kept}; run again")
    if row.outcome is not None and row.outcome.detail:
        parts.append(row.outcome.detail)
    text = "\n".join(parts)
    return f'<span class="text">{esc(text)}</span>{_containment(row.containment)}'


def _mark_row(row: MarkRow) -> str:
    return (
        f'<tr class="event event-{row.kind}">{seq_cells(row.seq, None, row.ts)}'
        f'<td>{esc(row.kind)}</td><td colspan="{COLUMNS - 3}">{badge(row.label, row.tone)} '
        f'<span class="text">{esc(row.detail)}</span></td></tr>\n'
    )
