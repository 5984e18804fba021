"""The budget section: a table of each limit's share used, above the charts."""

from __future__ import annotations

from harness.record.cell import Spend
from harness.record.report.charts import chart
from harness.record.report.collect import Collector
from harness.record.report.fmt import FORMATS
from harness.record.report.safe import Html, finite, html, join

BUDGET_KEYS = ("iterations", "seconds", "cost_usd", "turns", "passes")


def budget_section(page: Collector) -> Html:
    used, limit = page.cell.used, page.cell.limit
    rows = join(_budget_row(key, used, limit) for key in BUDGET_KEYS)
    return html(
        '<section id="budget">\n<h2>Budget</h2>\n<table class="budget">\n'
        "<thead><tr><th>budget</th><th>used</th><th>limit</th><th>share</th></tr></thead>\n"
        "<tbody>\n{}</tbody>\n</table>\n{}"
        "</section>\n",
        rows,
        chart(page.chart.points(), page.chart.count, limit),
    )


_BUDGET_NAMES = {
    "iterations": "iterations",
    "seconds": "agent time",
    "cost_usd": "cost",
    "turns": "turns",
    "passes": "passes (steps run)",
}


def _budget_row(key: str, used: Spend, limit: Spend) -> Html:
    spent, cap = finite(getattr(used, key)), finite(getattr(limit, key))
    share = spent / cap if cap > 0 else 0.0
    tone = "fail" if cap > 0 and share >= 1 else "ok"
    fmt = FORMATS[key]
    return html(
        '<tr class="budget-{key}"><th scope="row">{name}</th>'
        "<td>{spent}</td><td>{cap}</td>"
        '<td><span class="bar"><span class="fill tone-{tone}" style="width:{width:.1f}%">'
        "</span></span> {share:.0f}%</td></tr>\n",
        key=key,
        name=_BUDGET_NAMES[key],
        spent=fmt(spent),
        cap=fmt(cap),
        tone=tone,
        width=min(share, 1.0) * 100,
        share=share * 100,
    )
