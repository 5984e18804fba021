"""The budget chart: four SVG panels, one per metric, each in its own units against its limit."""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.cell import Spend
from harness.record.report.fmt import FORMATS, TICKS, count
from harness.record.report.model import Point
from harness.record.report.safe import esc, finite

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


def chart(points: list[Point], builds: int, final_limit: Spend) -> str:
    height = LEGEND_H + 2 * PANEL_H
    panels = "".join(
        _panel(points, builds, final_limit, key, title, i) for i, (key, title) in enumerate(_PANELS)
    )
    note = "" if builds else _no_builds(height)
    return (
        f'<svg id="budget-chart" role="img" aria-labelledby="budget-chart-title" '
        f'viewBox="0 0 {2 * PANEL_W} {height}" width="100%" preserveAspectRatio="xMidYMin meet">\n'
        '<title id="budget-chart-title">Cumulative budget used after each build, '
        "against its limit</title>\n"
        f"{_legend(builds)}{panels}{note}</svg>\n"
    )


def _no_builds(height: int) -> str:
    return (
        f'<text class="note" x="{PANEL_W}" y="{height / 2 + 10:.0f}" text-anchor="middle">'
        "no builds yet</text>\n"
    )


def _legend(builds: int) -> str:
    return (
        '<g class="legend">'
        '<line class="used" x1="20" y1="18" x2="52" y2="18"/>'
        '<text x="58" y="22">used, cumulative</text>'
        '<line class="limit" x1="200" y1="18" x2="232" y2="18"/>'
        '<text x="238" y="22">limit</text>'
        f'<text x="{2 * PANEL_W - 20}" y="22" text-anchor="end">'
        f"x axis: builds, 1 to {builds:,}</text></g>\n"
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


def _panel(points: list[Point], builds: int, final: Spend, key: str, title: str, i: int) -> str:
    values = [(p.build, _amount(p.used, key)) for p in points]
    limit = _amount(final, key)
    # The limit in force at each build, then today's: an extension after the last build shows,
    # and so does a limit a later goal version lowered.
    limits = [(p.build, _amount(p.limit, key)) for p in points] + [(max(builds, 1), limit)]
    frame = _frame(i, builds, max(v for _, v in values + limits))
    last = values[-1][1] if values else 0.0
    return (
        f'<g class="panel panel-{key}">\n'
        f"{_panel_title(frame, title, key, last, limit)}"
        f"{_axes(frame, key, limit, last, max(v for _, v in limits))}"
        f"{_limit_path(frame, limits)}"
        f"{_used_line(frame, values)}</g>\n"
    )


def _panel_title(frame: Frame, title: str, key: str, used: float, limit: float) -> str:
    fmt = FORMATS[key]
    share = f" ({used / limit * 100:.0f}%)" if limit > 0 else ""
    return (
        f'<text class="panel-title" x="{frame.left:.0f}" y="{frame.top - 14:.0f}">'
        f"{esc(title)}: {esc(fmt(used))} of {esc(fmt(limit))}{share}</text>\n"
    )


def _axes(frame: Frame, key: str, limit: float, spend: float, highest: float) -> str:
    right, bottom = frame.left + frame.width, frame.top + frame.height
    parts = [
        _y_tick(frame, key, value, right) for value in _y_ticks(frame, key, limit, spend, highest)
    ]
    parts += [_x_tick(frame, build, bottom) for build in _x_ticks(int(frame.x_max))]
    parts.append(
        f'<path class="axis" d="M{frame.left:.1f} {frame.top:.1f}V{bottom:.1f}H{right:.1f}"/>'
    )
    parts.append(
        f'<text class="axis-label" x="{frame.left + frame.width / 2:.1f}" y="{bottom + 34:.1f}" '
        'text-anchor="middle">builds</text>'
    )
    return "\n".join(parts) + "\n"


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


def _y_tick(frame: Frame, key: str, value: float, right: float) -> str:
    y = frame.y(value)
    return (
        f'<line class="grid" x1="{frame.left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}"/>'
        f'<text class="tick" x="{frame.left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">'
        f"{esc(TICKS.get(key, FORMATS[key])(value))}</text>"
    )


def _x_ticks(builds: int) -> list[int]:
    if builds <= 6:
        return list(range(builds + 1))
    return sorted({round(builds * i / 5) for i in range(6)})


def _x_tick(frame: Frame, build: int, bottom: float) -> str:
    x = frame.x(build)
    return (
        f'<line class="axis" x1="{x:.1f}" y1="{bottom:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}"/>'
        f'<text class="tick" x="{x:.1f}" y="{bottom + 16:.1f}" text-anchor="middle">'
        f"{build:,}</text>"
    )


def _limit_path(frame: Frame, limits: list[tuple[int, float]]) -> str:
    """A step line: each build is held to the limit in force when it finished."""
    d = f"M{frame.x(0):.1f} {frame.y(limits[0][1]):.1f}"
    for build, value in limits:
        d += f"V{frame.y(value):.1f}H{frame.x(build):.1f}"
    end = frame.y(limits[-1][1])
    return (
        f'<path class="limit" d="{d}"/>'
        f'<text class="limit-label" x="{frame.left + frame.width + 4:.1f}" y="{end + 4:.1f}">'
        "limit</text>\n"
    )


def _used_line(frame: Frame, values: list[tuple[int, float]]) -> str:
    if not values:
        return ""
    coords = [(frame.x(0), frame.y(0))] + [(frame.x(b), frame.y(v)) for b, v in values]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    # Dots only while they stay apart; a sampled long run reads better as a plain line.
    dots = coords[1:] if len(coords) <= 60 else coords[-1:]
    circles = "".join(f'<circle class="used" cx="{x:.1f}" cy="{y:.1f}" r="3"/>' for x, y in dots)
    return f'<polyline class="used" points="{line}"/>{circles}\n'
