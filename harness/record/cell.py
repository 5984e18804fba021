"""The state cell: the one attested summary of a goal, and the file that holds it.

The cell file carries a MAC keyed by the goal's secret and bound to the goal and the format
version, so a cell that was edited or moved from another goal is refused. How events change
the cell is the fold (`harness.record.fold`).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from harness.errors import TrustFailure
from harness.record.events import (
    TERMINAL,
    GateReason,
    Status,
    StepName,
    is_gate_reason,
    is_status,
    is_step,
)
from harness.record.formats import refuse_unknown_keys, versioned_object
from harness.record.position import START, Position
from harness.record.schedule import is_time_or_none, next_due, reached, slot
from harness.store.fsutil import atomic_write, canonical_json, read_no_follow

if TYPE_CHECKING:
    from collections.abc import Callable

CELL_VERSION = 1
MAX_CELL_BYTES = 64 * 1024
_MAC_TAG = b"harness-cell\x00"


@dataclass(frozen=True)
class Spend:
    """Budget amounts: what was used, or the limits."""

    iterations: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0
    turns: int = 0
    passes: int = 0


@dataclass(frozen=True)
class InFlight:
    """A step whose start is recorded and whose finish is not (yet)."""

    step: StepName
    iteration: int
    call_id: str
    base: str
    runner: str = ""  # which clone runs it: "<host>:<git common dir>"
    lease_until: str = ""  # after this time another clone may take the step over

    def held_elsewhere(self, runner: str, now: Callable[[], str]) -> bool:
        """Whether another clone than `runner` started the step and its lease has not run
        out at `now()` (the ledger's ISO format: compares as text; the clock is read only
        for another clone's step): not a crash, and not this clone's to take over
        (remote.md, item 5)."""
        return self.runner not in ("", runner) and now() < self.lease_until

    def holder_text(self) -> str:
        return (
            f"{self.step}[{self.iteration}] is being run by {self.runner} "
            f"(lease until {self.lease_until})"
        )


class SessionTotals(NamedTuple):
    """The running totals an agent session last reported, to turn the next into an increase.

    Stored as `[name, cost_usd, turns]`, plus `[input, cached input, output]` tokens when
    the agent reports token totals (codex); cells written before tokens read the same.
    """

    name: str
    cost_usd: float
    turns: int
    tokens: tuple[int, int, int] | None = None

    def to_list(self) -> list[Any]:
        head: list[Any] = [self.name, self.cost_usd, self.turns]
        return head if self.tokens is None else [*head, list(self.tokens)]

    @classmethod
    def from_list(cls, raw: Any) -> SessionTotals:
        name, cost_usd, turns, *rest = raw
        if len(rest) > 1:
            raise ValueError(f"a session entry has {len(raw)} fields, expected 3 or 4")
        tokens = tuple(int(n) for n in rest[0]) if rest else None
        if tokens is not None and len(tokens) != 3:
            raise ValueError("a session entry's tokens must be 3 numbers")
        return cls(str(name), float(cost_usd), int(turns), tokens)


@dataclass(frozen=True)
class Unavailable:
    """The model API failed on the last `count` builds in a row (`loop.md`)."""

    count: int
    tries: int  # the bound: at count == tries the goal stops at agent_unavailable
    message: str  # the tool's own message, from the last of them
    retry_at: str | None  # when the next try is due; None on the last try

    def given_up(self) -> bool:
        return self.count >= self.tries

    def waiting(self, now: str) -> bool:
        """Whether the next try is still to come at `now` (same ISO format: compares as text)."""
        return not self.given_up() and self.retry_at is not None and now < self.retry_at


class RuleCount(NamedTuple):
    """An owner rule's count over the goal's record: in how many checks it fired, as a
    blocking rule (`hits`) and as an `enforce: warn` rule (`warned`). The rule is
    `config:<index>` (a config destructive rule) or `lesson:<name>` (a lesson check)."""

    rule: str
    hits: int
    warned: int


MAX_RULE_COUNTS = 64  # rules counted per goal: keeps the cell (64 KiB at most) bounded


@dataclass(frozen=True)
class LifetimeUsed:
    """A recurring goal's spend over all its runs (`runs`: the runs started)."""

    cost_usd: float = 0.0
    seconds: float = 0.0
    turns: int = 0
    runs: int = 0


@dataclass(frozen=True)
class LifetimeCaps:
    """The goal file's `lifetime` caps; None: no cap on that amount."""

    cost_usd: float | None = None
    seconds: float | None = None
    turns: int | None = None
    runs: int | None = None


LIFETIME_KEYS = ("cost_usd", "seconds", "turns", "runs")


@dataclass(frozen=True)
class Cell:
    goal: str
    status: Status = "pending"
    step: StepName | None = None
    iteration: int = 0
    failing_test: str | None = None
    used: Spend = field(default_factory=Spend)
    limit: Spend = field(default_factory=Spend)
    gate: GateReason | None = None
    gate_detail: str | None = None
    no_progress_count: int = 0
    no_progress_fingerprint: str | None = None
    no_progress_passes: int = 2
    steps: tuple[StepName, ...] = ()
    goal_sha256: str | None = None
    owners_sha256: str | None = None
    in_flight: InFlight | None = None
    judge_passed: bool = False
    review_passed: bool = False
    feedback: str | None = None
    plan_notes: str | None = None
    gate_commit: str | None = None
    owners_commit: str | None = None
    destructive: tuple[str, ...] = ()
    destructive_detail: str | None = None
    approved_classes: tuple[str, ...] = ()
    sessions: tuple[SessionTotals, ...] = ()  # agent session → last reported totals
    lessons_given: tuple[str, ...] = ()  # lessons put into any build's prompt
    unavailable: Unavailable | None = None  # the model API failed on the last builds
    # The goal's halt.stale_after in seconds (None: recorded before it was kept) and the
    # time of the last event, which is what last advanced the goal (`status` says stale).
    stale_after_s: int | None = None
    warned: tuple[str, ...] = ()  # the last build's hits of `enforce: warn` rules
    # Each owner rule's hits and warned counts, by rule id; None: a cell written before
    # they were kept (hydrate then compares it with the fold without them; cell.md).
    rule_counts: tuple[RuleCount, ...] | None = None
    advanced_at: str | None = None
    # A recurring goal (`every`, docs/specs/cell.md): the run the cell is in, when and from
    # which control commit it started, when it was due (its schedule's anchor; None in a cell
    # written before it was kept), how the last run ended (None while one is under way), the
    # interval, and the spend over all runs with its caps. All default for a one-shot goal.
    run: int = 1
    run_started_at: str | None = None
    run_due_at: str | None = None
    run_base: str | None = None
    run_ended: Status | None = None
    every_s: int | None = None
    lifetime_limit: LifetimeCaps | None = None
    lifetime_used: LifetimeUsed | None = None
    # The work tree id (the tree without ledger/) the harness committed with this cell:
    # evidence of the checkpoint, not a fold of the ledger (what ships must equal it).
    tree: str | None = None
    position: Position = START

    def to_dict(self) -> dict[str, Any]:
        raw = asdict(self)
        for name in _TUPLES[2:]:
            raw[name] = list(getattr(self, name))
        raw["sessions"] = [entry.to_list() for entry in self.sessions]
        raw["rule_counts"] = None if self.rule_counts is None else rule_counts_json(self)
        raw["position"] = {"seq": self.position.seq, "hash": self.position.hash}
        return raw

    def exhausted(self) -> list[str]:
        """The budget keys whose use has reached the limit (iterations: no new round left)."""
        used, limit = self.used, self.limit
        hits = []
        if self.iteration > used.iterations and used.iterations >= limit.iterations:
            hits.append("iterations")
        for key in ("seconds", "cost_usd", "turns"):
            if getattr(used, key) >= getattr(limit, key):
                hits.append(key)
        return hits

    def next_run_due(self) -> str | None:
        """When a recurring goal's next run is due: an interval after its run was due (a
        cell written before `run_due_at` was kept: after its run started; schedule.py)."""
        return next_due(self.run_due_at or self.run_started_at, self.every_s)

    def run_due(self, now: str) -> bool:
        """The run has ended and the next may start at `now` (a run waiting for a human is
        not ended: runs never pile up)."""
        due = self.next_run_due()
        return due is not None and self.status in TERMINAL and reached(due, self.every_s or 0, now)

    def run_slot(self, now: str) -> str | None:
        """The anchored time a run started at `now` stands for (schedule.slot)."""
        due = self.next_run_due()
        return None if due is None else slot(due, self.every_s or 0, now)

    def lifetime_hits(self, starting: bool = False) -> list[str]:
        """The lifetime caps the spend over all runs has reached; `runs` (the runs started)
        only when a run is about to start."""
        used, caps = self.lifetime_used, self.lifetime_limit
        if used is None or caps is None or self.every_s is None:
            return []
        keys = LIFETIME_KEYS if starting else LIFETIME_KEYS[:3]
        return [
            key
            for key in keys
            if getattr(caps, key) is not None and getattr(used, key) >= getattr(caps, key)
        ]

    def lifetime_text(self, starting: bool = False) -> str:
        """`cost_usd 4.1/4.0 over 7 runs`: each reached cap, used against it."""
        used, caps = self.lifetime_used, self.lifetime_limit
        assert used is not None and caps is not None
        hits = self.lifetime_hits(starting)
        parts = [f"{k} {getattr(used, k)}/{getattr(caps, k)}" for k in hits]
        return ", ".join(parts) + f" over {used.runs} run{'s' if used.runs != 1 else ''}"


def rule_counts_json(cell: Cell) -> dict[str, dict[str, int]]:
    """`{"config:0": {"hits": 0, "warned": 2}, ...}`: the cell's and `status --json`'s form."""
    counts = cell.rule_counts or ()
    return {c.rule: {"hits": c.hits, "warned": c.warned} for c in counts}


def _rule_counts_from(raw: Any) -> tuple[RuleCount, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) > MAX_RULE_COUNTS:
        raise ValueError(f"rule_counts must be a mapping of at most {MAX_RULE_COUNTS} rules")
    counts = []
    for rule, entry in sorted(raw.items()):
        hits, warned = entry["hits"], entry["warned"]
        if set(entry) != {"hits", "warned"} or not all(_count(n) for n in (hits, warned)):
            raise ValueError(f"rule_counts.{rule} must be {{hits, warned}} counts")
        counts.append(RuleCount(str(rule), hits, warned))
    return tuple(counts)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def pending_classes(cell: Cell) -> tuple[str, ...]:
    """Destructive classes found and not yet crossed by a signed unpark."""
    return tuple(c for c in cell.destructive if c not in cell.approved_classes)


# ---- the attested file ----------------------------------------------------------------


def _mac(key: bytes, goal_id: str, body: bytes) -> str:
    tag = _MAC_TAG + f"v{CELL_VERSION}\x00{goal_id}\x00".encode()
    return hmac.new(key, tag + body, hashlib.sha256).hexdigest()


def cell_bytes(cell: Cell, key: bytes) -> bytes:
    body = {"v": CELL_VERSION, **cell.to_dict()}
    mac = _mac(key, cell.goal, canonical_json(body))
    return canonical_json({**body, "mac": mac}) + b"\n"


def write_cell(path: Path, cell: Cell, key: bytes) -> bytes:
    """Write the attested cell; its bytes are returned (a runner signs their hash)."""
    data = cell_bytes(cell, key)
    if len(data) > MAX_CELL_BYTES:
        raise TrustFailure(f"{path}: the cell would be {len(data)} bytes (limit {MAX_CELL_BYTES})")
    atomic_write(path, data)
    return data


def parse_cell(data: bytes, source: str, goal_id: str, key: bytes) -> Cell:
    """Check the format version first, then size, MAC (domain-separated by goal and
    version), goal and fields (formats.py: a newer record is named as such)."""
    raw = versioned_object(data, source, "cell", CELL_VERSION, MAX_CELL_BYTES)
    mac = raw.pop("mac", None)
    if not isinstance(mac, str):
        raise TrustFailure(f"{source}: the cell has no MAC")
    if raw.get("goal") != goal_id:
        raise TrustFailure(
            f"{source}: the cell belongs to goal {raw.get('goal')!r}, not {goal_id!r}"
        )
    if not hmac.compare_digest(mac, _mac(key, goal_id, canonical_json(raw))):
        raise TrustFailure(
            f"{source}: the cell's MAC does not match: the cell was edited or moved, or the secret is wrong"
        )
    refuse_unknown_keys(raw, _KEYS, CELL_VERSION, source, "cell")
    return _cell_from(raw, source)


def peek_cell(data: bytes, source: str, goal_id: str) -> Cell:
    """The cell's fields WITHOUT checking its MAC: only to show a human what they sign.

    A decision signed from a forged cell names a state the real ledger does not have, so a
    runner (which checks the MAC) never honours it.
    """
    raw = versioned_object(data, source, "cell", CELL_VERSION, MAX_CELL_BYTES)
    if raw.get("goal") != goal_id:
        raise TrustFailure(f"{source}: not a version {CELL_VERSION} cell of goal {goal_id!r}")
    raw.pop("mac", None)
    refuse_unknown_keys(raw, _KEYS, CELL_VERSION, source, "cell")
    return _cell_from(raw, source)


def _spend_from(raw: Any, source: str, key: str, positive: bool) -> Spend:
    try:
        spend = Spend(**raw)
    except TypeError:
        raise TrustFailure(f"{source}: {key}: malformed budget record") from None
    for name, value in vars(spend).items():  # its fields, without asdict's deep copies
        bad = (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
        )
        if bad or value < 0 or (positive and value <= 0):
            # Fail safe: a budget we cannot trust never becomes a fresh allowance.
            raise TrustFailure(f"{source}: {key}.{name}: {value!r} is not a valid budget amount")
    return spend


_TUPLES = (
    "used",
    "limit",
    "steps",
    "destructive",
    "approved_classes",
    "sessions",
    "lessons_given",
    "warned",
)
_TUPLE_SET = frozenset(_TUPLES)


# What a cell of this version holds: the fields, its version and its MAC.
_KEYS = frozenset({f.name for f in fields(Cell)} | {"v", "mac"})

# Fields added within format version 1; a cell written before them reads as their default.
_OPTIONAL: dict[str, Any] = {
    "gate_commit": None,
    "owners_commit": None,
    "destructive": [],
    "destructive_detail": None,
    "approved_classes": [],
    "sessions": [],
    "lessons_given": [],
    "unavailable": None,
    "tree": None,
    "stale_after_s": None,
    "advanced_at": None,
    "warned": [],
    "rule_counts": None,
    "run": 1,
    "run_started_at": None,
    "run_due_at": None,
    "run_base": None,
    "run_ended": None,
    "every_s": None,
    "lifetime_limit": None,
    "lifetime_used": None,
}


def _cell_from(raw: dict[str, Any], source: str) -> Cell:
    raw = _OPTIONAL | raw
    try:
        raw.pop("v")
        pos = raw.pop("position")
        flight = raw.pop("in_flight")
        unavailable = raw.pop("unavailable")
        rule_counts = _rule_counts_from(raw.pop("rule_counts"))
        caps, spent = raw.pop("lifetime_limit"), raw.pop("lifetime_used")
        fields: dict[str, Any] = {k: v for k, v in raw.items() if k not in _TUPLE_SET}
        fields.update({name: tuple(raw[name]) for name in _TUPLES[2:]})
        fields["sessions"] = tuple(SessionTotals.from_list(entry) for entry in raw["sessions"])
        cell = Cell(
            **fields,
            used=_spend_from(raw["used"], source, "used", positive=False),
            limit=_spend_from(raw["limit"], source, "limit", positive=raw["status"] != "pending"),
            position=Position(int(pos["seq"]), str(pos["hash"])),
            in_flight=InFlight(**flight) if flight is not None else None,
            unavailable=Unavailable(**unavailable) if unavailable is not None else None,
            rule_counts=rule_counts,
            lifetime_limit=LifetimeCaps(**caps) if caps is not None else None,
            lifetime_used=LifetimeUsed(**spent) if spent is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise TrustFailure(f"{source}: the cell's fields are malformed ({exc})") from None
    _check_words(cell, source)
    _check_runs(cell, source)
    return cell


def _check_words(cell: Cell, source: str) -> None:
    """The fields typed by the record's Literals hold one of their values (events.py)."""
    if not is_status(cell.status):
        raise TrustFailure(f"{source}: status: unknown status {cell.status!r}")
    if cell.run_ended is not None and cell.run_ended not in TERMINAL:
        raise TrustFailure(f"{source}: run_ended: {cell.run_ended!r} is not how a run ends")
    flight = cell.in_flight.step if cell.in_flight is not None else None
    for name, step in (("step", cell.step), ("in_flight.step", flight)):
        if step is not None and not is_step(step):
            raise TrustFailure(f"{source}: {name}: unknown step {step!r}")
    for step in cell.steps:
        if not is_step(step):
            raise TrustFailure(f"{source}: steps: unknown step {step!r}")
    if cell.gate is not None and not is_gate_reason(cell.gate):
        raise TrustFailure(f"{source}: gate: unknown gate reason {cell.gate!r}")


def _check_runs(cell: Cell, source: str) -> None:
    """A recurring goal's numbers are trusted no more than its budget (fail safe)."""
    if type(cell.run) is not int or cell.run < 1:
        raise TrustFailure(f"{source}: run: {cell.run!r} is not a run number")
    for name in ("run_started_at", "run_due_at"):
        if not is_time_or_none(getattr(cell, name)):
            raise TrustFailure(f"{source}: {name}: {getattr(cell, name)!r} is not a time")
    for name, record, positive in (
        ("lifetime_used", cell.lifetime_used, False),
        ("lifetime_limit", cell.lifetime_limit, True),
    ):
        for key in LIFETIME_KEYS if record is not None else ():
            value = getattr(record, key)
            if value is None and positive:
                continue
            bad = (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
            )
            if bad or value < 0 or (positive and value <= 0):
                raise TrustFailure(f"{source}: {name}.{key}: {value!r} is not a valid amount")


def read_cell(path: Path, source: str, goal_id: str, key: bytes) -> Cell | None:
    """The cell at `path`, or None when there is none."""
    data = read_no_follow(path)
    if data is None:
        return None
    return parse_cell(data, source, goal_id, key)
