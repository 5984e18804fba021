"""`harness replay --format html`: one self-contained page about one goal.

The page is built in one pass over the records and keeps only what it shows: the first and
last iterations in full (the middle is counted, not kept) and a budget chart sampled to a
fixed number of points, so a ledger of a million events renders in bounded memory.

Everything taken from an event is hostile text (agent summaries, test names, even signer
names) and is escaped, with control and bidi-override characters made visible. The page
loads nothing and runs nothing (its Content-Security-Policy forbids both, in case escaping
is ever wrong), and it holds no time but the events' own: the same ledger, the same bytes.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from harness.record.cell import Cell, Spend
from harness.record.events import TERMINAL, WAITING
from harness.record.fold import apply
from harness.record.ledger import Event, Position, Record

HEAD_ITERATIONS = 50
TAIL_ITERATIONS = 200
HEAD_ROWS = 20  # rows kept at the start of one iteration
TAIL_ROWS = 40  # and at its end
HEAD_ENTRIES = 50  # decisions and gates
TAIL_ENTRIES = 200
CHART_POINTS = 500
TEXT_CHARS = 400
SHOWN_PATHS = 5
COLUMNS = 9
BUDGET_KEYS = ("iterations", "seconds", "cost_usd", "turns", "passes")

T = TypeVar("T")

# ---- hostile text -----------------------------------------------------------------------

# C0/C1 controls (but tab and newline), bidi overrides that could make text read backwards,
# and lone surrogates (valid in JSON, unencodable in UTF-8).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _text(value: object) -> str:
    """Any JSON value as text; a non-string where a string was expected still shows."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def esc(value: object) -> str:
    """Text safe in HTML content and in double- or single-quoted attributes."""
    return html.escape(_UNSAFE.sub(_visible, _text(value)), quote=True)


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return (
        text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    )


def _num(value: object) -> float:
    """A finite number, or 0: a malformed amount must not break the page or the chart."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(_text(item) for item in value[:50])
    return (_text(value),) if value else ()


# ---- formatting -------------------------------------------------------------------------


def _money(value: float) -> str:
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400):,}d {int(seconds % 86400 // 3600):02d}h"


def _count(value: float) -> str:
    return f"{round(value):,}"


_FORMATS: dict[str, Callable[[float], str]] = {
    "iterations": _count,
    "seconds": _duration,
    "cost_usd": _money,
    "turns": _count,
    "passes": _count,
}


# Axis ticks want round money, not the table's four decimals for small amounts.
def _compact(value: float, decimals: int = 0) -> str:
    """A tick label short enough for the axis margin, however large the limit."""
    if value >= 1e6:
        return f"{value / 1e6:,.1f}M"
    if value >= 1e4:
        return f"{value / 1e3:,.0f}k"
    return f"{value:,.{decimals}f}"


_TICKS: dict[str, Callable[[float], str]] = {
    "cost_usd": lambda v: "$" + _compact(v, 2),
    "seconds": lambda v: _duration(v).replace(" 00h", "").replace(" 00m", ""),
    "iterations": _compact,
    "turns": _compact,
}


def _clock(ts: str) -> str:
    """The time of day of an ISO timestamp; other stamps are shown whole."""
    found = re.fullmatch(r"\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)(\.\d+)?Z?", ts)
    return found.group(1) if found else ts


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} " + (word if n == 1 else many or word + "s")


# ---- bounded collections ----------------------------------------------------------------


class Window(Generic[T]):
    """The first `head` and last `tail` items of a stream, and what fell between them."""

    def __init__(self, head: int, tail: int) -> None:
        self.head: list[T] = []
        self.tail: deque[T] = deque(maxlen=tail)
        self._head_size = head
        self.count = 0
        self.first_folded: T | None = None
        self.last_folded: T | None = None

    def add(self, item: T) -> None:
        self.count += 1
        if len(self.head) < self._head_size:
            self.head.append(item)
            return
        if self.tail.maxlen is not None and len(self.tail) == self.tail.maxlen:
            dropped = self.tail[0]
            if self.first_folded is None:
                self.first_folded = dropped
            self.last_folded = dropped
        self.tail.append(item)

    @property
    def folded(self) -> int:
        return self.count - len(self.head) - len(self.tail)

    def last(self) -> T | None:
        if self.tail:
            return self.tail[-1]
        return self.head[-1] if self.head else None


@dataclass(frozen=True)
class Point:
    """The budget right after one build finished."""

    build: int
    used: Spend
    limit: Spend


class Sampler:
    """At most `cap` evenly spaced points of a stream of unknown length, plus the last.

    It keeps every `stride`-th point; when full it drops every other one and doubles the
    stride, so the kept points stay evenly spaced whatever the stream's final length.
    """

    def __init__(self, cap: int = CHART_POINTS) -> None:
        self.cap = cap
        self.stride = 1
        self.count = 0
        self.kept: list[Point] = []
        self.final: Point | None = None

    def add(self, point: Point) -> None:
        self.count += 1
        self.final = point
        if (self.count - 1) % self.stride:
            return
        self.kept.append(point)
        if len(self.kept) >= self.cap:
            self.kept = self.kept[::2]
            self.stride *= 2

    def points(self) -> list[Point]:
        if self.final is None or (self.kept and self.kept[-1] is self.final):
            return list(self.kept)
        return [*self.kept, self.final]


# ---- what the page keeps ----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a finished step showed, cut to what the page prints."""

    seq: int
    label: str
    tone: str
    duration_s: float
    cost_usd: float | None
    turns: int | None
    changed: int | None
    paths: tuple[str, ...]
    detail: str


@dataclass
class StepRow:
    seq: int
    ts: str
    step: str
    call_id: str
    rerun: bool
    outcome: Outcome | None = None
    cutoff: tuple[int, int] | None = None  # (seq of step.cutoff, paths it left changed)


@dataclass(frozen=True)
class MarkRow:
    """An event that is not a step: a gate, a decision, a blocked done gate, the end."""

    seq: int
    ts: str
    kind: str
    label: str
    tone: str
    detail: str


Row = StepRow | MarkRow


@dataclass
class Iteration:
    number: int
    rows: Window[Row] = field(default_factory=lambda: Window[Row](HEAD_ROWS, TAIL_ROWS))


@dataclass(frozen=True)
class Decision:
    seq: int
    ts: str
    decision: str
    signers: tuple[str, ...]
    bound: tuple[tuple[str, str], ...]
    crossed: str | None


@dataclass
class Gate:
    seq: int
    ts: str
    iteration: int
    status: str
    reason: str
    detail: str
    outcome: str = "open"


# ---- one pass over the records ----------------------------------------------------------


def _step_label(event: Event) -> tuple[str, str]:
    data, result = event.data, event.data.get("result")
    if data.get("timed_out"):
        return "timed out", "fail"
    if result in ("tamper", "violation"):
        return ("tamper" if result == "tamper" else "read-only violation"), "fail"
    if event.step == "build":
        code = data.get("exit_code")
        return ("done", "ok") if code == 0 else (f"exit {_text(code)}", "fail")
    if result in ("pass", "fail"):
        return str(result), str(result)
    return _text(result) or "done", "neutral"


def _bound(data: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """What a signature was bound to, as far as the event says; a missing key is left out."""
    return tuple(
        (key.replace("_", " "), _cut(_text(data[key]), 200)) for key in keys if data.get(key)
    )


def _first_line(value: object) -> str:
    return next((line for line in _text(value).splitlines() if line.strip()), "")


def _step_detail(event: Event) -> str:
    data = event.data
    if data.get("result") in ("tamper", "violation"):
        return "changed: " + ", ".join(_names(data.get("changed"))[:SHOWN_PATHS])
    if event.step == "build":
        error = _text(data.get("agent_error"))
        return _text(data.get("summary")) + (f"\nagent error: {error}" if error else "")
    if event.step == "judge":
        failing = _text(data.get("failing_test"))
        return f"failing: {failing}" if failing else ""
    if event.step in ("review", "plan") and data.get("result") != "pass":
        return _first_line(data.get("stdout_tail"))
    return ""


def outcome(event: Event) -> Outcome:
    data = event.data
    label, tone = _step_label(event)
    build = event.step == "build"
    changed = data.get("changed")
    paths = _names(changed)
    return Outcome(
        seq=event.seq,
        label=label,
        tone=tone,
        duration_s=_num(data.get("duration_s")),
        cost_usd=_num(data.get("cost_usd")) if build else None,
        turns=int(_num(data.get("turns"))) if build else None,
        changed=len(changed) if isinstance(changed, list) else None,
        paths=tuple(_cut(p, 120) for p in paths[:SHOWN_PATHS]),
        detail=_cut(_step_detail(event)),
    )


_END_TONES = {"goal.completed": "pass", "goal.failed": "fail"}


class Collector:
    """Folds the records into the cell and keeps the bounded parts of the page."""

    def __init__(self, goal_id: str) -> None:
        self.cell = Cell(goal=goal_id)
        self.events = 0
        self.first_ts = self.last_ts = ""
        self.approvers: tuple[str, ...] = ()
        self.iterations: Window[Iteration] = Window(HEAD_ITERATIONS, TAIL_ITERATIONS)
        self.decisions: Window[Decision] = Window(HEAD_ENTRIES, TAIL_ENTRIES)
        self.gates: Window[Gate] = Window(HEAD_ENTRIES, TAIL_ENTRIES)
        self.chart = Sampler()
        self.open_steps: dict[tuple[str, int], StepRow] = {}
        self.cut_off: set[tuple[str, int]] = set()
        self.open_gate: Gate | None = None

    def add(self, record: Record) -> None:
        event = record.event
        before = self.cell
        self.cell = apply(before, event, Position(event.seq, record.hash))
        self.events += 1
        self.first_ts = self.first_ts or event.ts
        self.last_ts = event.ts
        handler = _HANDLERS.get(event.type, Collector.on_other)
        handler(self, event, before)

    def row(self, iteration: int, row: Row) -> None:
        """Rows group by iteration in ledger order; a new number starts a new group."""
        group = self.iterations.last()
        if group is None or group.number != iteration:
            group = Iteration(iteration)
            self.iterations.add(group)
        group.rows.add(row)

    def mark(self, event: Event, kind: str, label: str, tone: str, detail: str) -> None:
        row = MarkRow(event.seq, event.ts, kind, _cut(label, 200), tone, _cut(detail))
        self.row(event.iteration, row)

    def on_approved(self, event: Event, before: Cell) -> None:
        data = event.data
        self.approvers = _names(data.get("approved_by"))
        kind = event.type.split(".")[1]
        bound = (("goal sha256", _text(data.get("goal_sha256"))),)
        crossed = before.gate if event.type == "goal.revised" else None
        self.decisions.add(
            Decision(event.seq, event.ts, f"run (goal {kind})", self.approvers, bound, crossed)
        )
        if event.type == "goal.revised":
            self.resolve(f"cleared by goal revision #{event.seq}")
            who = ", ".join(self.approvers)
            self.mark(event, "revised", "goal revised", "info", f"approved by {who}")

    def on_step_started(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = StepRow(
            event.seq, event.ts, key[0], _text(event.data.get("call_id")), key in self.cut_off
        )
        self.cut_off.discard(key)
        self.open_steps[key] = row
        self.row(event.iteration, row)

    def on_step_cutoff(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = self.open_steps.pop(key, None)
        if row is None:
            row = StepRow(event.seq, event.ts, key[0], _text(event.data.get("call_id")), False)
            self.row(event.iteration, row)
        changed = event.data.get("changed")
        row.cutoff = (event.seq, len(changed) if isinstance(changed, list) else 0)
        self.cut_off.add(key)

    def on_step_finished(self, event: Event, before: Cell) -> None:
        key = (event.step or "", event.iteration)
        row = self.open_steps.pop(key, None)
        if row is None:
            row = StepRow(event.seq, event.ts, key[0], _text(event.data.get("call_id")), False)
            self.row(event.iteration, row)
        row.outcome = outcome(event)
        if event.step == "build":
            self.chart.add(Point(self.chart.count + 1, self.cell.used, self.cell.limit))

    def on_done_blocked(self, event: Event, before: Cell) -> None:
        missing = ", ".join(_names(event.data.get("missing")))
        self.mark(event, "blocked", "done gate blocked", "warn", f"missing: {missing}")

    def on_gated(self, event: Event, before: Cell) -> None:
        data = event.data
        status, reason = _text(data.get("status")), _text(data.get("reason"))
        detail = _cut(_text(data.get("detail")))
        commit = _cut(_text(data.get("commit")), 80)
        if commit and commit not in detail:  # the ship gate's detail already names it
            detail += f"\nat commit {commit}"
        gate = Gate(event.seq, event.ts, event.iteration, status, _cut(reason, 200), detail)
        self.resolve(f"replaced by gate #{event.seq}")
        self.gates.add(gate)
        self.open_gate = gate
        self.mark(event, "gate", f"{status}: {reason}", _tone(status), detail)

    def on_decision(self, event: Event, before: Cell) -> None:
        data = event.data
        decision = _text(data.get("decision")) or "(unnamed)"
        signers = _names(data.get("signers"))
        bound = _bound(data, ("commit", "ledger", "signature_sha256"))
        if "limits" in data:
            bound += (("new limits", _text(data["limits"])),)
        # The event names the gate it crossed; older events did not, so fall back to the fold.
        crossed = _text(data["gate"]) if data.get("gate") else before.gate
        self.decisions.add(
            Decision(event.seq, event.ts, _cut(decision, 200), signers, bound, crossed)
        )
        self.resolve(f"crossed by decision {_cut(decision, 80)} #{event.seq}")
        who = ", ".join(signers) or "(no signer recorded)"
        self.mark(event, "decision", f"decision {decision}", "info", f"signed by {who}")

    def on_owners_rotated(self, event: Event, before: Cell) -> None:
        signers = _names(event.data.get("signers"))
        bound = _bound(event.data, ("owners_sha256", "owners_commit"))
        self.decisions.add(
            Decision(event.seq, event.ts, "rotate owners", signers, bound, before.gate)
        )
        if before.gate == "owners_changed":
            self.resolve(f"cleared by owners rotation #{event.seq}")
        who = ", ".join(signers) or "(no signer recorded)"
        self.mark(event, "owners", "owners rotated", "info", f"signed by {who}")

    def on_end(self, event: Event, before: Cell) -> None:
        kind = event.type.split(".")[1]
        if event.type == "goal.cancelled":
            self.resolve(f"goal cancelled #{event.seq}")
        data = event.data
        detail = " · ".join(_text(data[k]) for k in ("detail", "commit", "by") if data.get(k))
        self.mark(event, "end", kind, _END_TONES.get(event.type, "neutral"), detail)

    def on_other(self, event: Event, before: Cell) -> None:
        self.mark(event, "other", event.type, "neutral", "")

    def resolve(self, how: str) -> None:
        """Say how the open gate ended; a folded gate is simply no longer on the page."""
        if self.open_gate is not None:
            self.open_gate.outcome = how
            self.open_gate = None


_HANDLERS: dict[str, Callable[[Collector, Event, Cell], None]] = {
    "goal.started": Collector.on_approved,
    "goal.revised": Collector.on_approved,
    "step.started": Collector.on_step_started,
    "step.cutoff": Collector.on_step_cutoff,
    "step.finished": Collector.on_step_finished,
    "done.blocked": Collector.on_done_blocked,
    "goal.gated": Collector.on_gated,
    "decision.used": Collector.on_decision,
    "owners.rotated": Collector.on_owners_rotated,
    "goal.completed": Collector.on_end,
    "goal.failed": Collector.on_end,
    "goal.cancelled": Collector.on_end,
    "goal.resumed": Collector.on_end,
}

_TONES = {
    "completed": "pass",
    "parked_at_eyes": "warn",
    "needs_attention": "fail",
    "failed": "fail",
    "running": "info",
}


def _tone(status: str) -> str:
    return _TONES.get(status, "neutral")


def _badge(label: str, tone: str) -> str:
    return f'<span class="badge tone-{tone}">{esc(label)}</span>'


# ---- the page ---------------------------------------------------------------------------


def render_html(records: Iterable[Record], goal_id: str, verify_note: str) -> bytes:
    """The whole report page for one goal, from its verified records alone."""
    page = Collector(goal_id)
    for record in records:
        page.add(record)
    parts = [
        _head(goal_id),
        _header(page, goal_id, verify_note),
        _budget(page),
        _timeline(page, goal_id),
        _gates(page),
        _decisions(page),
        _footer(page, goal_id),
        "</main>\n</body>\n</html>\n",
    ]
    return "".join(parts).encode("utf-8")


def _head(goal_id: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # Nothing may load or run, even if some text ever escaped its escaping.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>goal {esc(goal_id)} · goal-harness report</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
    )


def _fact(name: str, value_html: str) -> str:
    return f'<tr><th scope="row">{esc(name)}</th><td>{value_html}</td></tr>\n'


def _gate_fact(cell: Cell) -> str:
    if cell.gate is None:
        return '<span class="muted">none</span>'
    detail = f' <span class="text">{esc(_cut(cell.gate_detail or ""))}</span>'
    return f"{_badge(cell.gate, _tone(cell.status))}{detail}"


def _header(page: Collector, goal_id: str, verify_note: str) -> str:
    cell = page.cell
    approvers = ", ".join(page.approvers)
    facts = [
        _fact("status", _badge(cell.status, _tone(cell.status))),
        _fact("gate", _gate_fact(cell)),
        _fact("next step", f"{esc(cell.step or 'none')} · iteration {cell.iteration:,}"),
        _fact("failing test", f'<code class="wrap">{esc(cell.failing_test or "-")}</code>'),
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


def _ledger_fact(page: Collector) -> str:
    span = f" · {esc(page.first_ts)} → {esc(page.last_ts)}" if page.events else ""
    head = esc(str(page.cell.position))
    return f'{_plural(page.events, "event")}{span}<br><code class="wrap small">head {head}</code>'


# ---- budget -----------------------------------------------------------------------------


def _budget(page: Collector) -> str:
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
    spent, cap = _num(getattr(used, key)), _num(getattr(limit, key))
    share = spent / cap if cap > 0 else 0.0
    tone = "fail" if cap > 0 and share >= 1 else "ok"
    width = f"{min(share, 1.0) * 100:.1f}%"
    fmt = _FORMATS[key]
    return (
        f'<tr class="budget-{key}"><th scope="row">{_BUDGET_NAMES[key]}</th>'
        f"<td>{esc(fmt(spent))}</td><td>{esc(fmt(cap))}</td>"
        f'<td><span class="bar"><span class="fill tone-{tone}" style="width:{width}"></span></span>'
        f" {share * 100:.0f}%</td></tr>\n"
    )


# The chart: four small panels, one per metric, each in its own units against its limit.
_PANELS = (
    ("cost_usd", "Cost (USD)"),
    ("seconds", "Agent time"),
    ("iterations", "Iterations"),
    ("turns", "Turns"),
)
PANEL_W, PANEL_H, LEGEND_H = 480, 230, 36
PAD_L, PAD_R, PAD_T, PAD_B = 80, 56, 40, 44


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
        return self.top + self.height * (1 - min(value, self.y_max) / self.y_max)


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


def _frame(index: int, builds: int, peak: float, limit: float) -> Frame:
    left = (index % 2) * PANEL_W + PAD_L
    top = LEGEND_H + (index // 2) * PANEL_H + PAD_T
    y_max = max(limit, peak) * 1.1 or 1.0
    return Frame(left, top, PANEL_W - PAD_L - PAD_R, PANEL_H - PAD_T - PAD_B, max(builds, 1), y_max)


def _panel(points: list[Point], builds: int, final: Spend, key: str, title: str, i: int) -> str:
    values = [(p.build, _num(getattr(p.used, key))) for p in points]
    limit = _num(getattr(final, key))
    # The limit in force at each build, then today's: an extension after the last build shows.
    limits = [(p.build, _num(getattr(p.limit, key))) for p in points] + [(max(builds, 1), limit)]
    frame = _frame(i, builds, max((v for _, v in values), default=0.0), limit)
    last = values[-1][1] if values else 0.0
    return (
        f'<g class="panel panel-{key}">\n'
        f"{_panel_title(frame, title, key, last, limit)}"
        f"{_axes(frame, key, limit, last)}"
        f"{_limit_path(frame, limits)}"
        f"{_used_line(frame, values)}</g>\n"
    )


def _panel_title(frame: Frame, title: str, key: str, used: float, limit: float) -> str:
    fmt = _FORMATS[key]
    share = f" ({used / limit * 100:.0f}%)" if limit > 0 else ""
    return (
        f'<text class="panel-title" x="{frame.left:.0f}" y="{frame.top - 14:.0f}">'
        f"{esc(title)}: {esc(fmt(used))} of {esc(fmt(limit))}{share}</text>\n"
    )


def _axes(frame: Frame, key: str, limit: float, peak: float) -> str:
    right, bottom = frame.left + frame.width, frame.top + frame.height
    # Counts get a whole-number middle tick, so "1.5 iterations" is never printed as "2".
    middle = float(round(limit / 2)) if _FORMATS[key] is _count else limit / 2
    ticks = sorted({0.0, middle, limit} | ({peak} if peak > limit * 1.15 else set()))
    parts = [_y_tick(frame, key, value, right) for value in ticks if value <= frame.y_max]
    parts += [_x_tick(frame, build, bottom) for build in _x_ticks(int(frame.x_max))]
    parts.append(
        f'<path class="axis" d="M{frame.left:.1f} {frame.top:.1f}V{bottom:.1f}H{right:.1f}"/>'
    )
    parts.append(
        f'<text class="axis-label" x="{frame.left + frame.width / 2:.1f}" y="{bottom + 34:.1f}" '
        'text-anchor="middle">builds</text>'
    )
    return "\n".join(parts) + "\n"


def _y_tick(frame: Frame, key: str, value: float, right: float) -> str:
    y = frame.y(value)
    return (
        f'<line class="grid" x1="{frame.left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}"/>'
        f'<text class="tick" x="{frame.left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">'
        f"{esc(_TICKS.get(key, _FORMATS[key])(value))}</text>"
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


# ---- timeline ---------------------------------------------------------------------------

_NUMERIC = frozenset({"seq", "duration", "cost", "turns", "iteration"})


def _heading_cells(headings: tuple[str, ...]) -> str:
    numeric = ' class="num"'
    return "".join(
        f'<th scope="col"{numeric if name in _NUMERIC else ""}>{name}</th>' for name in headings
    )


_HEADINGS = ("seq", "time", "step", "result", "duration", "cost", "turns", "changes", "detail")


def _timeline(page: Collector, goal_id: str) -> str:
    window = page.iterations
    bodies = [_iteration(group, page.cell) for group in window.head]
    if window.folded:
        bodies.append(_folded_iterations(window, goal_id))
    bodies += [_iteration(group, page.cell) for group in window.tail]
    if not window.count:
        bodies.append(
            f'<tbody><tr><td colspan="{COLUMNS}" class="muted">no steps yet</td></tr></tbody>\n'
        )
    heads = _heading_cells(_HEADINGS)
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
        f"… {_plural(window.folded, 'iteration')} folded here{span}. "
        f"<code>harness replay {esc(goal_id)} --format text</code> lists every event."
        "</td></tr></tbody>\n"
    )


def _iteration(group: Iteration, cell: Cell) -> str:
    rows = [_row(row, cell) for row in group.rows.head]
    if group.rows.folded:
        rows.append(
            f'<tr class="folded"><td colspan="{COLUMNS}">'
            f"… {_plural(group.rows.folded, 'row')} folded here</td></tr>\n"
        )
    rows += [_row(row, cell) for row in group.rows.tail]
    count = _plural(group.rows.count, "entry", "entries")
    return (
        f'<tbody class="iteration" data-iteration="{group.number}">\n'
        f'<tr class="iteration-title"><th colspan="{COLUMNS}" scope="rowgroup">'
        f'Iteration {group.number:,} <span class="muted">· {count}</span></th></tr>\n'
        f"{''.join(rows)}</tbody>\n"
    )


def _row(row: Row, cell: Cell) -> str:
    return _mark_row(row) if isinstance(row, MarkRow) else _step_row(row, cell)


def _seq_cells(first: int, last: int | None, ts: str) -> str:
    seq = f"{first:,}" if last is None or last == first else f"{first:,}–{last:,}"
    return f'<td class="num">{seq}</td><td><span title="{esc(ts)}">{esc(_clock(ts))}</span></td>'


def _step_row(row: StepRow, cell: Cell) -> str:
    done = row.outcome
    classes = f"step step-{esc(row.step)}"
    classes += " step-cutoff" if row.cutoff else ""
    classes += " step-rerun" if row.rerun else ""
    last = done.seq if done else (row.cutoff[0] if row.cutoff else None)
    step = esc(row.step) + (' <span class="tag">re-run</span>' if row.rerun else "")
    return (
        f'<tr class="{classes}">{_seq_cells(row.seq, last, row.ts)}<td>{step}</td>'
        f"<td>{_result(row, cell)}</td>{_measures(done)}<td>{_detail(row)}</td></tr>\n"
    )


def _result(row: StepRow, cell: Cell) -> str:
    if row.outcome is not None:
        return _badge(row.outcome.label, row.outcome.tone)
    if row.cutoff is not None:
        return _badge("cut off", "warn")
    current = cell.in_flight is not None and cell.in_flight.call_id == row.call_id
    if current and cell.status not in WAITING | TERMINAL:
        return _badge("in flight", "info")
    # Started, never finished, and the goal has stopped: e.g. a cut-off ship step.
    return _badge("outcome unknown" if row.step == "ship" else "no result", "warn")


def _measures(done: Outcome | None) -> str:
    if done is None:
        return "<td></td><td></td><td></td><td></td>"
    cost = _money(done.cost_usd) if done.cost_usd is not None else ""
    turns = f"{done.turns:,}" if done.turns is not None else ""
    return (
        f'<td class="num">{_duration(done.duration_s)}</td><td class="num">{cost}</td>'
        f'<td class="num">{turns}</td><td>{_diffstat(done)}</td>'
    )


def _diffstat(done: Outcome) -> str:
    if done.changed is None:
        return ""
    more = done.changed - len(done.paths)
    paths = "".join(f"<li>{esc(p)}</li>" for p in done.paths)
    extra = f"<li>+{more:,} more</li>" if more > 0 else ""
    listing = f'<ul class="paths">{paths}{extra}</ul>' if done.changed else ""
    return f'<span class="diffstat">{_plural(done.changed, "file")}</span>{listing}'


def _detail(row: StepRow) -> str:
    parts = []
    if row.cutoff is not None:
        kept = _plural(row.cutoff[1], "changed path")
        parts.append(f"cut off (#{row.cutoff[0]:,}); work in progress kept: {kept}; run again")
    if row.outcome is not None and row.outcome.detail:
        parts.append(row.outcome.detail)
    text = "\n".join(parts)
    return f'<span class="text">{esc(text)}</span>'


def _mark_row(row: MarkRow) -> str:
    return (
        f'<tr class="event event-{row.kind}">{_seq_cells(row.seq, None, row.ts)}'
        f'<td>{esc(row.kind)}</td><td colspan="{COLUMNS - 3}">{_badge(row.label, row.tone)} '
        f'<span class="text">{esc(row.detail)}</span></td></tr>\n'
    )


# ---- gates and decisions ----------------------------------------------------------------


def _entries(window: Window[T], render: Callable[[T], str], what: str, columns: int) -> str:
    rows = [render(item) for item in window.head]
    if window.folded:
        rows.append(
            f'<tr class="folded"><td colspan="{columns}">'
            f"… {_plural(window.folded, what)} folded here</td></tr>\n"
        )
    rows += [render(item) for item in window.tail]
    if not window.count:
        rows.append(f'<tr><td colspan="{columns}" class="muted">none</td></tr>\n')
    return "".join(rows)


def _table(section: str, title: str, headings: tuple[str, ...], rows: str) -> str:
    heads = _heading_cells(headings)
    return (
        f'<section id="{section}">\n<h2>{title}</h2>\n<table class="entries">\n'
        f"<thead><tr>{heads}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n</section>\n"
    )


_GATE_HEADINGS = ("seq", "time", "iteration", "status", "reason", "evidence", "outcome")


def _gates(page: Collector) -> str:
    rows = _entries(page.gates, _gate_row, "gate", len(_GATE_HEADINGS))
    return _table("gates", "Gates", _GATE_HEADINGS, rows)


def _gate_row(gate: Gate) -> str:
    outcome = _badge("open", _tone(gate.status)) if gate.outcome == "open" else esc(gate.outcome)
    return (
        f'<tr class="gate gate-{esc(gate.status)}">{_seq_cells(gate.seq, None, gate.ts)}'
        f'<td class="num">{gate.iteration:,}</td><td>{_badge(gate.status, _tone(gate.status))}</td>'
        f'<td><code class="reason">{esc(gate.reason)}</code></td>'
        f'<td><span class="text">{esc(gate.detail)}</span></td><td>{outcome}</td></tr>\n'
    )


_DECISION_HEADINGS = ("seq", "time", "decision", "signed by", "bound to", "crossed gate")


def _decisions(page: Collector) -> str:
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
        f'<tr class="decision decision-{esc(kind)}">{_seq_cells(d.seq, None, d.ts)}'
        f"<td>{esc(d.decision)}</td><td>{signed}</td><td>{bound}</td><td>{crossed}</td></tr>\n"
    )


def _footer(page: Collector, goal_id: str) -> str:
    return (
        "<footer>\n<p>Rendered from the ledger alone by "
        f"<code>harness replay {esc(goal_id)} --format html</code>: "
        f"{_plural(page.events, 'event')}; the same ledger always gives the same page.</p>\n"
        "</footer>\n"
    )


CSS = """
:root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--pass:#1a7f37;
--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--warn:#9a6700;--warn-bg:#fff8c5;
--info:#0969da;--info-bg:#ddf4ff}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:#fff;font:14px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.wrap{overflow-wrap:anywhere}.small{font-size:11.5px}.muted{color:var(--muted)}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
h1{font-size:26px;margin:2px 0 6px}h1 code{font-size:inherit}h2{font-size:18px;margin:32px 0 10px;
padding-bottom:4px;border-bottom:1px solid var(--line)}
.kicker{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.08em;font-size:12px}
.verify{display:inline-block;margin:4px 0 14px;padding:4px 10px;border-radius:6px;
background:var(--pass-bg);color:var(--pass);font-weight:600}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:5px 8px}
.facts{width:auto;min-width:60%}.facts th{color:var(--muted);font-weight:500;white-space:nowrap;
padding-right:18px}
.budget{width:auto;min-width:60%;margin-bottom:12px}
.budget th,.budget td,.entries th,.entries td,.timeline th,.timeline td{border-bottom:1px solid var(--line)}
thead th{background:var(--soft);font-size:12px;color:var(--muted);text-transform:uppercase;
letter-spacing:.04em}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{display:inline-block;width:140px;height:9px;background:var(--soft);border:1px solid var(--line);
border-radius:5px;overflow:hidden;vertical-align:middle}
.bar .fill{display:block;height:100%}
.fill.tone-ok{background:var(--info)}.fill.tone-fail{background:var(--fail)}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
white-space:nowrap;border:1px solid transparent}
.tone-pass{background:var(--pass-bg);color:var(--pass);border-color:#aceebb}
.tone-ok{background:var(--soft);color:var(--ink);border-color:var(--line)}
.tone-fail{background:var(--fail-bg);color:var(--fail);border-color:#ffcecb}
.tone-warn{background:var(--warn-bg);color:var(--warn);border-color:#f5e0a0}
.tone-info{background:var(--info-bg);color:var(--info);border-color:#b6e3ff}
.tone-neutral{background:var(--soft);color:var(--muted);border-color:var(--line)}
.tag{white-space:nowrap;font-size:11px;color:var(--warn);border:1px solid #f5e0a0;border-radius:4px;padding:0 4px}
.timeline td:nth-child(2),.entries td:nth-child(2){color:var(--muted);white-space:nowrap}
.timeline thead th:last-child{width:38%}
.iteration-title th{background:#eef1f4;font-size:13px;border-top:2px solid var(--line)}
.step-cutoff td{background:#fffdf0}
.event td{background:#fbfbfc}
.folded td{text-align:center;color:var(--muted);font-style:italic;background:var(--soft)}
.paths{margin:2px 0 0;padding-left:16px;font:11.5px ui-monospace,monospace;color:var(--muted)}
.signers{margin:0;padding:0;list-style:none}.signer{white-space:nowrap}
th.num{text-align:right}
#budget-chart{display:block;margin:8px 0 0;font:12px system-ui,sans-serif}
#budget-chart .used{fill:none;stroke:var(--info);stroke-width:2.2}
#budget-chart circle.used{fill:var(--info);stroke:none}
#budget-chart .limit{fill:none;stroke:var(--fail);stroke-width:1.6;stroke-dasharray:6 4}
#budget-chart .grid{stroke:#e6eaef}#budget-chart .axis{fill:none;stroke:#8c959f}
#budget-chart .tick,#budget-chart .axis-label,#budget-chart .legend text{fill:var(--muted)}
#budget-chart .panel-title{font-weight:600;fill:var(--ink)}
#budget-chart .limit-label{fill:var(--fail);font-size:11px}
#budget-chart .note{fill:var(--muted);font-size:16px}
footer{margin-top:36px;color:var(--muted);font-size:12px}
@media print{body{font-size:10pt}main{max-width:none;padding:0}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
tr,svg{break-inside:avoid}h2{break-after:avoid}}
@page{margin:12mm}
"""
