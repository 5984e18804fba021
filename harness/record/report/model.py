"""What the page keeps: bounded windows over the stream, chart samples and the rows shown.

A ledger of a million events renders in bounded memory because only the first and last
iterations (and gates and decisions) are kept in full, the middle counted, and the budget
chart sampled to a fixed number of points.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from harness.record.cell import Spend

HEAD_ITERATIONS = 50
TAIL_ITERATIONS = 200
HEAD_ROWS = 20  # rows kept at the start of one iteration
TAIL_ROWS = 40  # and at its end
HEAD_ENTRIES = 50  # decisions and gates
TAIL_ENTRIES = 200
CHART_POINTS = 500

T = TypeVar("T")


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
    containment: str = ""  # render.containment's words; "" when the start is not on record
    outcome: Outcome | None = None
    cutoff: tuple[int, int] | None = None  # (seq of step.cutoff, paths it left changed)
    # A step with an allowlist: its egress summary and one row per recorded destination
    # (destination, verdict, tries, sent, received; record/egress.py), None for any other.
    egress: tuple[str, tuple[tuple[str, str, str, str, str], ...]] | None = None


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
    change: str | None = None  # the ship gate's whole change (None: not recorded)
