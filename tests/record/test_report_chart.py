"""The budget chart's scale holds everything it draws: every limit in force, the spend, each
labelled on the axis, far below its limit or far above it (issue 16: the chart clipped a limit
above the axis). The SVG is read back as a browser would and its geometry checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import pytest

from harness.record.report.page import render_html
from tests.record.test_report import GOAL, LIMITS, NOTE, Story

MIN_TICK_GAP = 12.0  # px between two axis labels: the tick font is 12px


@dataclass
class Panel:
    """One panel's drawing, read from the SVG: its plot area, lines and axis labels."""

    key: str
    area: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # left, top, right, bottom
    limit: list[tuple[float, float]] = field(default_factory=list)  # the step line's corners
    used: list[tuple[float, float]] = field(default_factory=list)
    ticks: list[tuple[str, float]] = field(default_factory=list)  # y-axis label, its line's y
    limit_label: float | None = None  # the y of the line the "limit" label names
    title: str = ""


class Chart(HTMLParser):
    """The panels of `#budget-chart`, in order."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.panels: list[Panel] = []
        self._text: tuple[str, dict[str, str]] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        classes = found.get("class", "").split()
        if tag == "g" and "panel" in classes:
            self.panels.append(Panel(classes[1].removeprefix("panel-")))
        if not self.panels:
            return
        panel = self.panels[-1]
        if tag == "path" and "axis" in classes:
            left, top, bottom, right = map(float, re.findall(r"[\d.]+", found["d"]))
            panel.area = (left, top, right, bottom)
        elif tag == "path" and "limit" in classes:
            panel.limit = _corners(found["d"])
        elif tag == "polyline" and "used" in classes:
            pairs = (pair.split(",") for pair in found["points"].split())
            panel.used = [(float(x), float(y)) for x, y in pairs]
        elif tag == "text":
            self._text = (classes[0] if classes else "", found)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self._text is None or not self.panels:
            return
        kind, attrs = self._text
        panel, y = self.panels[-1], float(attrs.get("y", "0")) - 4
        if kind == "tick" and attrs.get("text-anchor") == "end":
            panel.ticks.append((data, y))
        elif kind == "limit-label":
            panel.limit_label = y
        elif kind == "panel-title":
            panel.title = data
        self._text = None

    def panel(self, key: str) -> Panel:
        return next(p for p in self.panels if p.key == key)


def _corners(d: str) -> list[tuple[float, float]]:
    """The corners of a step path written as `M x y` then `V y` and `H x` moves."""
    start = re.match(r"M([\d.-]+) ([\d.-]+)", d)
    assert start is not None, d
    x, y = float(start[1]), float(start[2])
    corners = [(x, y)]
    for move, value in re.findall(r"([VH])([\d.-]+)", d[start.end() :]):
        x, y = (x, float(value)) if move == "V" else (float(value), y)
        corners.append((x, y))
    return corners


def dollars(label: str) -> float:
    return float(label.removeprefix("$").replace(",", ""))


def assert_drawn_inside(panel: Panel) -> None:
    """Every corner of the limit line and every point of the spend lies in the plot area,
    none pinned to its top edge (where a clipped value would land)."""
    left, top, right, bottom = panel.area
    assert bottom - top > 100, panel
    for x, y in panel.limit + panel.used:
        assert left <= x <= right, (panel.key, x, panel.area)
        assert top < y <= bottom, (panel.key, y, panel.area)


def assert_ticks_apart(panel: Panel) -> None:
    ys = sorted(y for _, y in panel.ticks)
    gaps = [b - a for a, b in pairwise(ys)]
    assert all(gap >= MIN_TICK_GAP for gap in gaps), (panel.key, panel.ticks)


def assert_cost_scale(panel: Panel, today: float, spend: float, earlier: float = 0.0) -> None:
    """Today's limit (and an earlier, higher one) is drawn and labelled at its value, on one
    linear scale from $0 at the bottom edge, and the spend's last point sits at its value."""
    _, _, _, bottom = panel.area
    labelled = {dollars(label): y for label, y in panel.ticks}
    highest = max(labelled)
    scale = (bottom - labelled[highest]) / highest  # px per dollar
    for value, y in labelled.items():
        assert y == pytest.approx(bottom - value * scale, abs=0.15), (value, panel.ticks)
    drawn = {y for _, y in panel.limit}
    for value in {today, earlier} - {0.0}:
        assert value in labelled, (value, panel.ticks)
        assert any(abs(y - labelled[value]) <= 0.05 for y in drawn), (value, drawn)
    assert panel.limit[-1][1] == pytest.approx(labelled[today], abs=0.05)
    assert panel.limit_label == pytest.approx(labelled[today], abs=0.05)  # "limit" names it
    assert panel.used[-1][1] == pytest.approx(bottom - spend * scale, abs=0.15)


@pytest.fixture
def story(tmp_path: Path) -> Story:
    return Story(tmp_path / "events")


def chart_of(story: Story) -> Chart:
    return Chart(render_html(story.records(), GOAL, NOTE).decode())


def two_builds(story: Story, first: float, second: float) -> Story:
    story.approved()
    story.build(1, cost=first)
    story.judge(1, failing="t1")
    story.build(2, cost=second)
    story.judge(2, failing="t2")
    return story


def test_spend_far_below_its_limit_keeps_the_limit_on_the_axis(story: Story) -> None:
    chart = chart_of(two_builds(story, 0.003, 0.002))
    assert [p.key for p in chart.panels] == ["cost_usd", "seconds", "iterations", "turns"]
    for panel in chart.panels:
        assert_drawn_inside(panel)
        assert_ticks_apart(panel)
    cost = chart.panel("cost_usd")
    assert_cost_scale(cost, 2.0, 0.005)
    assert cost.title == "Cost (USD): $0.0050 of $2.00 (0%)"


def test_spend_far_above_its_limit_keeps_both_and_labels_them_apart(story: Story) -> None:
    """A build can overshoot: $31.50 against $2. Both stay on the scale, each labelled, and
    the labels do not pile up at the bottom."""
    chart = chart_of(two_builds(story, 1.5, 30.0))
    for panel in chart.panels:
        assert_drawn_inside(panel)
        assert_ticks_apart(panel)
    cost = chart.panel("cost_usd")
    assert_cost_scale(cost, 2.0, 31.5)
    assert {"$2.00", "$31.50"} <= {label for label, _ in cost.ticks}


def lowered_limit(story: Story, last_cost: float = 0.5) -> Story:
    """Extended to $50 after build 1, the goal revised back to $2 after build 2, a third build."""
    story.approved()
    story.build(1, cost=0.5)
    story.judge(1, failing="t1")
    story.gate(1, "needs_attention", "budget_exhausted", "cost_usd 0.5/2.0")
    extended = LIMITS | {"cost_usd": 50.0}
    story.decision(1, "extend-budget cost_usd=50", ["a@example.com"], limits=extended)
    story.build(2, cost=0.5)
    story.judge(2, failing="t2")
    story.gate(2, "needs_attention", "goal_changed", "the goal file changed")
    story.approved("goal.revised", by=["c@example.com"], iteration=2)
    story.build(3, cost=last_cost)
    return story


def test_a_limit_lowered_later_is_still_drawn_at_its_value(story: Story) -> None:
    """The build held to $50 shows $50 on the scale, not a line pinned to the top edge."""
    chart = chart_of(lowered_limit(story))
    for panel in chart.panels:
        assert_drawn_inside(panel)
        assert_ticks_apart(panel)
    cost = chart.panel("cost_usd")
    assert_cost_scale(cost, 2.0, 1.5, earlier=50.0)
    assert cost.title == "Cost (USD): $1.50 of $2.00 (75%)"


def test_the_chart_is_the_same_bytes_on_every_replay(tmp_path: Path) -> None:
    story = two_builds(Story(tmp_path / "events"), 1.5, 30.0)
    first = render_html(story.records(), GOAL, NOTE)
    assert render_html(story.records(), GOAL, NOTE) == first
    assert render_html(list(story.records()), GOAL, NOTE) == first


def test_a_negative_amount_draws_at_zero_inside_the_panel(story: Story) -> None:
    """A hostile ledger's negative cost must not draw below the axis."""
    two_builds(story, -5.0, 1.0)
    cost = chart_of(story).panel("cost_usd")
    assert_drawn_inside(cost)
    assert cost.used[1][1] == cost.area[3]  # -5 draws as 0, on the bottom edge
