"""The budget chart: four SVG panels, one per metric, each in its own units against its limit."""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.cell import Spend
from harness.record.report.fmt import FORMATS, TICKS, count
from harness.record.report.model import Point
from harness.record.report.safe import EMPTY, Html, finite, html, join

_PANELS = (
    ("cost_usd", "Cost (USD)"),
    ("seconds", "Agent time"),
    ("iterations", "Iterations"),
    ("turns", "Turns"),
)
PANEL_W, PANEL_H, LEGEND_H = 480, 230, 36
PAD_L, PAD_R, PAD_T, PAD_B = 80, 56, 40, 44
TICK_GAP = 14  # px between two y-axis labels (the tick font is 12px)


@dataclass(frozen=True)
class Frame:
    """One panel's plot area and scales."""

    left: float
    top: float
    width: float
    height: float
    x_max: float
    y_max: float

    def x(self, build: float) -> float:
        return self.left + self.width * build / self.x_max

    def y(self, value: float) -> float:
        # Never clamped: the scale holds every value drawn (_frame), so none lands on an edge.
        return self.top + self.height * (1 - value / self.y_max)


def chart(points: list[Point], builds: int, final_limit: Spend) -> Html:
    height = LEGEND_H + 2 * PANEL_H
    panels = join(
        _panel(points, builds, final_limit, key, title, i) for i, (key, title) in enumerate(_PANELS)
    )
    note = _no_builds(height) if not builds else EMPTY
    return html(
        '<svg id="budget-chart" role="img" aria-labelledby="budget-chart-title" '
        'viewBox="0 0 {} {}" width="100%" preserveAspectRatio="xMidYMin meet">\n'
        '<title id="budget-chart-title">Cumulative budget used after each build, '
        "against its limit</title>\n"
        "{}{}{}</svg>\n",
        2 * PANEL_W,
        height,
        _legend(builds),
        panels,
        note,
    )


def _no_builds(height: int) -> Html:
    return html(
        '<text class="note" x="{}" y="{:.0f}" text-anchor="middle">no builds yet</text>\n',
        PANEL_W,
        height / 2 + 10,
    )


def _legend(builds: int) -> Html:
    return html(
        '<g class="legend">'
        '<line class="used" x1="20" y1="18" x2="52" y2="18"/>'
        '<text x="58" y="22">used, cumulative</text>'
        '<line class="limit" x1="200" y1="18" x2="232" y2="18"/>'
        '<text x="238" y="22">limit</text>'
        '<text x="{}" y="22" text-anchor="end">'
        "x axis: builds, 1 to {:,}</text></g>\n",
        2 * PANEL_W - 20,
        builds,
    )


def _frame(index: int, builds: int, top_value: float) -> Frame:
    """The scale runs from 0 to a tenth above the highest value drawn, so nothing is clipped."""
    left = (index % 2) * PANEL_W + PAD_L
    top = LEGEND_H + (index // 2) * PANEL_H + PAD_T
    y_max = top_value * 1.1 or 1.0
    return Frame(left, top, PANEL_W - PAD_L - PAD_R, PANEL_H - PAD_T - PAD_B, max(builds, 1), y_max)


def _amount(spend: Spend, key: str) -> float:
    """A drawable amount: finite and not below 0 (a hostile ledger's -5 draws as 0)."""
    return max(0.0, finite(getattr(spend, key)))


def _panel(points: list[Point], builds: int, final: Spend, key: str, title: str, i: int) -> Html:
    values = [(p.build, _amount(p.used, key)) for p in points]
    limit = _amount(final, key)
    # The limit in force at each build, then today's: an extension after the last build shows,
    # and so does a limit a later goal version lowered.
    limits = [(p.build, _amount(p.limit, key)) for p in points] + [(max(builds, 1), limit)]
    frame = _frame(i, builds, max(v for _, v in values + limits))
    last = values[-1][1] if values else 0.0
    return html(
        '<g class="panel panel-{}">\n{}{}{}{}</g>\n',
        key,
        _panel_title(frame, title, key, last, limit),
        _axes(frame, key, limit, last, max(v for _, v in limits)),
        _limit_path(frame, limits),
        _used_line(frame, values),
    )


def _panel_title(frame: Frame, title: str, key: str, used: float, limit: float) -> Html:
    fmt = FORMATS[key]
    share = html(" ({:.0f}%)", used / limit * 100) if limit > 0 else EMPTY
    return html(
        '<text class="panel-title" x="{:.0f}" y="{:.0f}">{}: {} of {}{}</text>\n',
        frame.left,
        frame.top - 14,
        title,
        fmt(used),
        fmt(limit),
        share,
    )


def _axes(frame: Frame, key: str, limit: float, spend: float, highest: float) -> Html:
    right, bottom = frame.left + frame.width, frame.top + frame.height
    parts = [
        _y_tick(frame, key, value, right) for value in _y_ticks(frame, key, limit, spend, highest)
    ]
    parts += [_x_tick(frame, build, bottom) for build in _x_ticks(int(frame.x_max))]
    parts.append(
        html(
            '<path class="axis" d="M{:.1f} {:.1f}V{:.1f}H{:.1f}"/>',
            frame.left,
            frame.top,
            bottom,
            right,
        )
    )
    parts.append(
        html(
            '<text class="axis-label" x="{:.1f}" y="{:.1f}" text-anchor="middle">builds</text>',
            frame.left + frame.width / 2,
            bottom + 34,
        )
    )
    return html("{}\n", join(parts, Html("\n")))


def _y_ticks(frame: Frame, key: str, limit: float, spend: float, highest: float) -> list[float]:
    """The values labelled on the y axis, most important first, each kept only if its label
    stays TICK_GAP px clear of those already kept: today's limit, 0, the spend above it, a
    higher limit in force earlier, then half the limit."""
    # Counts get a whole-number middle tick, so "1.5 iterations" is never printed as "2".
    middle = float(round(limit / 2)) if FORMATS[key] is count else limit / 2
    wanted = [limit, 0.0]
    wanted += [spend] if spend > limit else []
    wanted += [highest] if highest > limit else []
    wanted += [middle] if 0 < middle < limit else []
    kept: list[float] = []
    for value in wanted:
        if all(abs(frame.y(value) - frame.y(other)) >= TICK_GAP for other in kept):
            kept.append(value)
    return sorted(kept)


def _y_tick(frame: Frame, key: str, value: float, right: float) -> Html:
    y = frame.y(value)
    return html(
        '<line class="grid" x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}"/>'
        '<text class="tick" x="{x:.1f}" y="{label:.1f}" text-anchor="end">{text}</text>',
        left=frame.left,
        y=y,
        right=right,
        x=frame.left - 6,
        label=y + 4,
        text=TICKS.get(key, FORMATS[key])(value),
    )


def _x_ticks(builds: int) -> list[int]:
    if builds <= 6:
        return list(range(builds + 1))
    return sorted({round(builds * i / 5) for i in range(6)})


def _x_tick(frame: Frame, build: int, bottom: float) -> Html:
    return html(
        '<line class="axis" x1="{x:.1f}" y1="{bottom:.1f}" x2="{x:.1f}" y2="{tick:.1f}"/>'
        '<text class="tick" x="{x:.1f}" y="{label:.1f}" text-anchor="middle">{build:,}</text>',
        x=frame.x(build),
        bottom=bottom,
        tick=bottom + 4,
        label=bottom + 16,
        build=build,
    )


def _limit_path(frame: Frame, limits: list[tuple[int, float]]) -> Html:
    """A step line: each build is held to the limit in force when it finished."""
    d = f"M{frame.x(0):.1f} {frame.y(limits[0][1]):.1f}"
    for build, value in limits:
        d += f"V{frame.y(value):.1f}H{frame.x(build):.1f}"
    end = frame.y(limits[-1][1])
    return html(
        '<path class="limit" d="{}"/>'
        '<text class="limit-label" x="{:.1f}" y="{:.1f}">limit</text>\n',
        d,  # numbers only, escaped all the same
        frame.left + frame.width + 4,
        end + 4,
    )


def _used_line(frame: Frame, values: list[tuple[int, float]]) -> Html:
    if not values:
        return EMPTY
    coords = [(frame.x(0), frame.y(0))] + [(frame.x(b), frame.y(v)) for b, v in values]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    # Dots only while they stay apart; a sampled long run reads better as a plain line.
    dots = coords[1:] if len(coords) <= 60 else coords[-1:]
    circles = join(
        html('<circle class="used" cx="{:.1f}" cy="{:.1f}" r="3"/>', x, y) for x, y in dots
    )
    return html('<polyline class="used" points="{}"/>{}\n', line, circles)
