"""The budget section: a table of each limit's share used, above the charts."""

from __future__ import annotations

from harness.record.cell import Spend
from harness.record.report.charts import chart
from harness.record.report.collect import Collector
from harness.record.report.fmt import FORMATS
from harness.record.report.safe import esc, finite

BUDGET_KEYS = ("iterations", "seconds", "cost_usd", "turns", "passes")


def budget_section(page: Collector) -> str:
    used, limit = page.cell.used, page.cell.limit
    rows = "".join(_budget_row(key, used, limit) for key in BUDGET_KEYS)
    return (
        '<section id="budget">\n<h2>Budget</h2>\n<table class="budget">\n'
        "<thead><tr><th>budget</th><th>used</th><th>limit</th><th>share</th></tr></thead>\n"
        f"<tbody>\n{rows}</tbody>\n</table>\n{chart(page.chart.points(), page.chart.count, limit)}"
        "</section>\n"
    )


_BUDGET_NAMES = {
    "iterations": "iterations",
    "seconds": "agent time",
    "cost_usd": "cost",
    "turns": "turns",
    "passes": "passes (steps run)",
}


def _budget_row(key: str, used: Spend, limit: Spend) -> str:
    spent, cap = finite(getattr(used, key)), finite(getattr(limit, key))
    share = spent / cap if cap > 0 else 0.0
    tone = "fail" if cap > 0 and share >= 1 else "ok"
    width = f"{min(share, 1.0) * 100:.1f}%"
    fmt = FORMATS[key]
    return (
        f'<tr class="budget-{key}"><th scope="row">{_BUDGET_NAMES[key]}</th>'
        f"<td>{esc(fmt(spent))}</td><td>{esc(fmt(cap))}</td>"
        f'<td><span class="bar"><span class="fill tone-{tone}" style="width:{width}"></span></span>'
        f" {share * 100:.0f}%</td></tr>\n"
    )
