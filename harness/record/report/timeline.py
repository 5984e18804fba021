"""The timeline: one table body per iteration, a row per step or mark, the middle folded."""

from __future__ import annotations

from harness.record.cell import Cell
from harness.record.events import TERMINAL, WAITING
from harness.record.report.cells import badge, heading_cells, seq_cells
from harness.record.report.collect import Collector
from harness.record.report.fmt import duration, money, plural
from harness.record.report.model import Iteration, MarkRow, Outcome, Row, StepRow, Window
from harness.record.report.safe import EMPTY, Html, html, join

COLUMNS = 9


_HEADINGS = ("seq", "time", "step", "result", "duration", "cost", "turns", "changes", "detail")


def timeline_section(page: Collector, goal_id: str) -> Html:
    window = page.iterations
    bodies = [_iteration(group, page.cell) for group in window.head]
    if window.folded:
        bodies.append(_folded_iterations(window, goal_id))
    bodies += [_iteration(group, page.cell) for group in window.tail]
    if not window.count:
        bodies.append(
            html(
                '<tbody><tr><td colspan="{}" class="muted">no steps yet</td></tr></tbody>\n',
                COLUMNS,
            )
        )
    return html(
        '<section id="timeline">\n<h2>Timeline</h2>\n'
        '<table class="timeline">\n<thead><tr>{}</tr></thead>\n{}'
        "</table>\n</section>\n",
        heading_cells(_HEADINGS),
        join(bodies),
    )


def _folded_iterations(window: Window[Iteration], goal_id: str) -> Html:
    first, last = window.first_folded, window.last_folded
    span = ""
    if first is not None and last is not None:
        span = f" (iterations {first.number:,} to {last.number:,})"
    return html(
        '<tbody class="folded"><tr><td colspan="{}">'
        "… {} folded here{}. "
        "<code>harness replay {} --format text</code> lists every event."
        "</td></tr></tbody>\n",
        COLUMNS,
        plural(window.folded, "iteration"),
        span,
        goal_id,
    )


def _iteration(group: Iteration, cell: Cell) -> Html:
    rows = [_row(row, cell) for row in group.rows.head]
    if group.rows.folded:
        rows.append(
            html(
                '<tr class="folded"><td colspan="{}">… {} folded here</td></tr>\n',
                COLUMNS,
                plural(group.rows.folded, "row"),
            )
        )
    rows += [_row(row, cell) for row in group.rows.tail]
    return html(
        '<tbody class="iteration" data-iteration="{number}">\n'
        '<tr class="iteration-title"><th colspan="{columns}" scope="rowgroup">'
        'Iteration {number:,} <span class="muted">· {count}</span></th></tr>\n'
        "{rows}</tbody>\n",
        number=group.number,
        columns=COLUMNS,
        count=plural(group.rows.count, "entry", "entries"),
        rows=join(rows),
    )


def _row(row: Row, cell: Cell) -> Html:
    return _mark_row(row) if isinstance(row, MarkRow) else _step_row(row, cell)


def _step_row(row: StepRow, cell: Cell) -> Html:
    done = row.outcome
    classes = f"step step-{row.step}"
    classes += " step-cutoff" if row.cutoff else ""
    classes += " step-rerun" if row.rerun else ""
    last = done.seq if done else (row.cutoff[0] if row.cutoff else None)
    rerun = html(' <span class="tag">re-run</span>') if row.rerun else EMPTY
    return html(
        '<tr class="{}">{}<td>{}{}</td><td>{}</td>{}<td>{}</td></tr>\n',
        classes,
        seq_cells(row.seq, last, row.ts),
        row.step,
        rerun,
        _result(row, cell),
        _measures(done),
        _detail(row),
    )


def _containment(words: str) -> Html:
    """How the step was contained, last in its detail; anything but contained stands out."""
    if not words:
        return EMPTY
    kind = "contained" if words.startswith("contained") else "uncontained"
    return html('<span class="containment {}">{}</span>', kind, words)


def _result(row: StepRow, cell: Cell) -> Html:
    if row.outcome is not None:
        return badge(row.outcome.label, row.outcome.tone)
    if row.cutoff is not None:
        return badge("cut off", "warn")
    current = cell.in_flight is not None and cell.in_flight.call_id == row.call_id
    if current and cell.status not in WAITING | TERMINAL:
        return badge("in flight", "info")
    # Started, never finished, and the goal has stopped: e.g. a cut-off ship step.
    return badge("outcome unknown" if row.step == "ship" else "no result", "warn")


def _measures(done: Outcome | None) -> Html:
    if done is None:
        return html("<td></td><td></td><td></td><td></td>")
    cost = money(done.cost_usd) if done.cost_usd is not None else ""
    turns = f"{done.turns:,}" if done.turns is not None else ""
    return html(
        '<td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td>{}</td>',
        duration(done.duration_s),
        cost,
        turns,
        _diffstat(done),
    )


def _diffstat(done: Outcome) -> Html:
    if done.changed is None:
        return EMPTY
    more = done.changed - len(done.paths)
    paths = join(html("<li>{}</li>", p) for p in done.paths)
    extra = html("<li>+{:,} more</li>", more) if more > 0 else EMPTY
    listing = html('<ul class="paths">{}{}</ul>', paths, extra) if done.changed else EMPTY
    return html('<span class="diffstat">{}</span>{}', plural(done.changed, "file"), listing)


def _detail(row: StepRow) -> Html:
    parts = []
    if row.cutoff is not None:
        kept = plural(row.cutoff[1], "changed path")
        parts.append(f"cut off (#{row.cutoff[0]:,}); work in progress kept: {kept}; run again")
    if row.outcome is not None and row.outcome.detail:
        parts.append(row.outcome.detail)
    return html(
        '<span class="text">{}</span>{}{}',
        "\n".join(parts),
        _containment(row.containment),
        _egress(row),
    )


_EGRESS_HEADINGS = ("destination", "verdict", "tries", "bytes sent", "bytes received")


def _egress(row: StepRow) -> Html:
    """Where a step with an allowlist connected, as the proxy recorded it (sandbox.md)."""
    if row.egress is None:
        return EMPTY
    said, rows = row.egress
    body = join(
        html(
            '<tr class="egress-{}">{}</tr>',
            "denied" if cells[1].startswith("denied") else "allowed",
            join(html("<td>{}</td>", cell) for cell in cells),
        )
        for cells in rows
    )
    head = heading_cells(_EGRESS_HEADINGS) if rows else EMPTY
    return html(
        '<table class="egress"><caption>{}</caption><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table>",
        said,
        head,
        body,
    )


def _mark_row(row: MarkRow) -> Html:
    return html(
        '<tr class="event event-{kind}">{seq}<td>{kind}</td><td colspan="{span}">{badge} '
        '<span class="text">{detail}</span></td></tr>\n',
        kind=row.kind,
        seq=seq_cells(row.seq, None, row.ts),
        span=COLUMNS - 3,
        badge=badge(row.label, row.tone),
        detail=row.detail,
    )
