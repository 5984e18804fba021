"""The state cell: the one attested summary of a goal, and the fold that produces it.

Every field is a pure function of the ledger: `apply(cell, event)` is the only way the
cell changes. That is what lets a crash between a ledger append and the cell write be
rolled forward, and lets `verify` recompute the cell from the events alone.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import TrustFailure
from harness.record.events import AGENT_STEPS, STATUSES
from harness.record.ledger import START, Event, Position
from harness.store.fsutil import atomic_write, canonical_json, strict_json_loads

CELL_VERSION = 1
MAX_CELL_BYTES = 64 * 1024
MAX_NOTE_CHARS = 8_000
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

    step: str
    iteration: int
    call_id: str
    base: str
    runner: str = ""  # which clone runs it: "<host>:<git common dir>"
    lease_until: str = ""  # after this time another clone may take the step over


@dataclass(frozen=True)
class Cell:
    goal: str
    status: str = "pending"
    step: str | None = None
    iteration: int = 0
    failing_test: str | None = None
    used: Spend = field(default_factory=Spend)
    limit: Spend = field(default_factory=Spend)
    gate: str | None = None
    gate_detail: str | None = None
    no_progress_count: int = 0
    no_progress_fingerprint: str | None = None
    no_progress_passes: int = 2
    steps: tuple[str, ...] = ()
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
    sessions: tuple[tuple[str, float, int], ...] = ()  # agent session → last reported totals
    lessons_given: tuple[str, ...] = ()  # lessons put into any build's prompt
    position: Position = START

    def to_dict(self) -> dict[str, Any]:
        raw = asdict(self)
        for name in _TUPLES[2:]:
            raw[name] = list(getattr(self, name))
        raw["sessions"] = [list(entry) for entry in self.sessions]
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


_R = TypeVar("_R")


def replace(record: _R, **changes: Any) -> _R:
    """dataclasses.replace without its per-call field introspection: the fold calls this for
    every event (it was two thirds of verify's time). The cell's records have no
    __post_init__ and no init=False fields, so the result is the same."""
    fields = record.__dict__
    unknown = changes.keys() - fields.keys()
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    new = object.__new__(type(record))
    new.__dict__.update(fields, **changes)
    return new


def bounded(text: str | None, limit: int = MAX_NOTE_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters cut]\n" + text[-limit:]


# ---- the fold -------------------------------------------------------------------------


def apply(cell: Cell, event: Event, position: Position) -> Cell:
    """The cell after `event`. Unknown event types only move the position."""
    handler = _HANDLERS.get(event.type)
    updated = handler(cell, event) if handler else cell
    return replace(updated, position=position)


def fold(goal_id: str, events: Iterable[tuple[Event, Position]], start: Cell | None = None) -> Cell:
    cell = start or Cell(goal=goal_id)
    for event, position in events:
        cell = apply(cell, event, position)
    return cell


def _limits(data: Mapping[str, Any]) -> Spend:
    raw = data["limits"]
    return Spend(raw["iterations"], raw["seconds"], raw["cost_usd"], raw["turns"], raw["passes"])


def _on_started(cell: Cell, event: Event) -> Cell:
    data = event.data
    steps = tuple(data["steps"])
    return replace(
        cell,
        status="running",
        step="plan" if "plan" in steps else "build",
        iteration=1,
        steps=steps,
        limit=_limits(data),
        no_progress_passes=data["no_progress_passes"],
        goal_sha256=data["goal_sha256"],
        owners_sha256=data["owners_sha256"],
        owners_commit=data["control_commit"],
        destructive=tuple(data.get("command_classes", ())),
        destructive_detail=data.get("command_detail"),
    )


def _on_revised(cell: Cell, event: Event) -> Cell:
    data = event.data
    return replace(
        cell,
        status="running",
        gate=None,
        gate_detail=None,
        steps=tuple(data["steps"]),
        limit=_limits(data),
        no_progress_passes=data["no_progress_passes"],
        goal_sha256=data["goal_sha256"],
        owners_sha256=data["owners_sha256"],
        owners_commit=data["control_commit"],
        destructive=tuple(data.get("command_classes", ())),
        destructive_detail=data.get("command_detail"),
        approved_classes=(),
    )


def _on_step_started(cell: Cell, event: Event) -> Cell:
    step = event.step or ""
    used = replace(cell.used, passes=cell.used.passes + 1)
    if step in AGENT_STEPS:
        used = replace(used, iterations=max(used.iterations, event.iteration))
    data = event.data
    flight = InFlight(
        step,
        event.iteration,
        data["call_id"],
        data["base"],
        data.get("runner", ""),
        data.get("lease_until", ""),
    )
    cell = replace(cell, status="running", used=used, in_flight=flight)
    given = [ref["name"] for ref in data.get("lessons", ())]
    if given:
        cell = replace(cell, lessons_given=tuple(dict.fromkeys((*cell.lessons_given, *given))))
    if step in AGENT_STEPS:
        # Destructive findings and their approvals belong to one build's changes.
        cell = replace(cell, destructive=(), destructive_detail=None, approved_classes=())
    return cell


def _on_step_cutoff(cell: Cell, event: Event) -> Cell:
    return replace(cell, in_flight=None)


def _spend(cell: Cell, event: Event) -> Spend:
    data, used = event.data, cell.used
    seconds = used.seconds + (data["duration_s"] if event.step in AGENT_STEPS else 0.0)
    return replace(
        used,
        seconds=seconds,
        cost_usd=used.cost_usd + data.get("cost_usd", 0.0),
        turns=used.turns + data.get("turns", 0),
    )


def _repair(cell: Cell, failing: str | None, feedback: str | None, tree: str) -> Cell:
    fingerprint = hashlib.sha256(f"{failing}\0{tree}".encode()).hexdigest()
    same = fingerprint == cell.no_progress_fingerprint
    return replace(
        cell,
        step="build",
        iteration=cell.iteration + 1,
        failing_test=failing,
        feedback=bounded(feedback),
        judge_passed=False,
        review_passed=False,
        no_progress_count=cell.no_progress_count + 1 if same else 1,
        no_progress_fingerprint=fingerprint,
    )


def _on_step_finished(cell: Cell, event: Event) -> Cell:
    data = event.data
    cell = replace(cell, in_flight=None, used=_spend(cell, event))
    step, passed = event.step, data.get("result") == "pass"
    if step == "plan":
        return replace(cell, step="build", plan_notes=bounded(data.get("stdout_tail")))
    if step == "build":
        found = tuple(data.get("destructive_classes", ()))
        detail = data.get("destructive_detail")
        cell = _remember_session(cell, data)
        return replace(
            cell,
            step="judge",
            judge_passed=False,
            review_passed=False,
            destructive=found,
            destructive_detail=detail,
        )
    if step == "judge" and passed:
        after = "review" if "review" in cell.steps else None
        return replace(
            cell,
            step=after,
            judge_passed=True,
            failing_test=None,
            feedback=None,
            no_progress_count=0,
            no_progress_fingerprint=None,
        )
    if step == "judge":
        return _repair(
            cell,
            data.get("failing_test") or "(judge failed)",
            data.get("output_tail"),
            data["tree"],
        )
    if step == "review" and passed:
        return replace(cell, step=None, review_passed=True)
    if step == "review":
        return _repair(cell, "(review findings)", data.get("stdout_tail"), data["tree"])
    return replace(cell, step=None)


MAX_SESSIONS = 50


def _remember_session(cell: Cell, data: Mapping[str, Any]) -> Cell:
    """Keep the totals an agent session last reported, to turn the next into an increase."""
    session = data.get("session")
    if not session:
        return cell
    kept = [s for s in cell.sessions if s[0] != session]
    entry = (session, data.get("reported_cost_usd") or 0.0, data.get("reported_turns") or 0)
    return replace(cell, sessions=(*kept, entry)[-MAX_SESSIONS:])


def _on_done_blocked(cell: Cell, event: Event) -> Cell:
    data = event.data
    failed = data.get("lessons_failed") or []
    failing = f"lesson:{failed[0]}" if failed else f"expect.files: {', '.join(data['missing'])}"
    return _repair(cell, failing, data.get("detail"), data["tree"])


def _on_gated(cell: Cell, event: Event) -> Cell:
    data = event.data
    return replace(
        cell,
        status=data["status"],
        gate=data["reason"],
        gate_detail=data.get("detail"),
        gate_commit=data.get("commit"),
    )


def _on_completed(cell: Cell, event: Event) -> Cell:
    return replace(cell, status="completed", step=None, gate=None, gate_detail=None)


def _on_cancelled(cell: Cell, event: Event) -> Cell:
    return replace(cell, status="cancelled", gate=None, gate_detail=None)


def _on_failed(cell: Cell, event: Event) -> Cell:
    return replace(
        cell, status="failed", step=None, gate=None, gate_detail=event.data.get("detail")
    )


def pending_classes(cell: Cell) -> tuple[str, ...]:
    """Destructive classes found and not yet crossed by a signed unpark."""
    return tuple(c for c in cell.destructive if c not in cell.approved_classes)


def _on_decision(cell: Cell, event: Event) -> Cell:
    data = event.data
    decision, crossed = data["decision"], data["gate"]
    cell = replace(cell, status="running", gate=None, gate_detail=None, gate_commit=None)
    if decision == "ship":
        return replace(cell, step="ship")
    if crossed == "ship_outcome_unknown":
        # The owner checked the outside world: it shipped. Never retried on its own.
        return replace(cell, status="completed", step=None)
    if "limits" in data:
        cell = replace(cell, limit=_limits(data))
    if crossed.startswith("destructive:"):
        cell = replace(cell, approved_classes=(*cell.approved_classes, crossed.split(":", 1)[1]))
    if crossed == "no_progress":
        cell = replace(cell, no_progress_count=0, no_progress_fingerprint=None)
    return cell


def _on_owners_rotated(cell: Cell, event: Event) -> Cell:
    data = event.data
    cell = replace(cell, owners_sha256=data["owners_sha256"], owners_commit=data["owners_commit"])
    if cell.gate == "owners_changed":
        cell = replace(cell, status="running", gate=None, gate_detail=None)
    return cell


_HANDLERS = {
    "goal.started": _on_started,
    "goal.revised": _on_revised,
    "step.started": _on_step_started,
    "step.cutoff": _on_step_cutoff,
    "step.finished": _on_step_finished,
    "done.blocked": _on_done_blocked,
    "goal.gated": _on_gated,
    "goal.completed": _on_completed,
    "goal.cancelled": _on_cancelled,
    "goal.failed": _on_failed,
    "decision.used": _on_decision,
    "owners.rotated": _on_owners_rotated,
}


# ---- the attested file ----------------------------------------------------------------


def _mac(key: bytes, goal_id: str, body: bytes) -> str:
    tag = _MAC_TAG + f"v{CELL_VERSION}\x00{goal_id}\x00".encode()
    return hmac.new(key, tag + body, hashlib.sha256).hexdigest()


def cell_bytes(cell: Cell, key: bytes) -> bytes:
    body = {"v": CELL_VERSION, **cell.to_dict()}
    mac = _mac(key, cell.goal, canonical_json(body))
    return canonical_json({**body, "mac": mac}) + b"\n"


def write_cell(path: Path, cell: Cell, key: bytes) -> None:
    data = cell_bytes(cell, key)
    if len(data) > MAX_CELL_BYTES:
        raise TrustFailure(f"{path}: the cell would be {len(data)} bytes (limit {MAX_CELL_BYTES})")
    atomic_write(path, data)


def parse_cell(data: bytes, source: str, goal_id: str, key: bytes) -> Cell:
    """Check size, JSON, version, MAC (domain-separated by goal and version), then fields."""
    if len(data) > MAX_CELL_BYTES:
        raise TrustFailure(f"{source}: the cell is {len(data)} bytes (limit {MAX_CELL_BYTES})")
    try:
        raw = strict_json_loads(data)
    except ValueError as exc:
        raise TrustFailure(f"{source}: the cell is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise TrustFailure(f"{source}: the cell is not a JSON object")
    if raw.get("v") != CELL_VERSION:
        raise TrustFailure(
            f"{source}: unknown cell format version {raw.get('v')!r} (this harness reads version {CELL_VERSION})"
        )
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
    return _cell_from(raw, source)


def peek_cell(data: bytes, source: str, goal_id: str) -> Cell:
    """The cell's fields WITHOUT checking its MAC: only to show a human what they sign.

    A decision signed from a forged cell names a state the real ledger does not have, so a
    runner (which checks the MAC) never honours it.
    """
    try:
        raw = strict_json_loads(data)
    except ValueError as exc:
        raise TrustFailure(f"{source}: the cell is not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or raw.get("goal") != goal_id or raw.get("v") != CELL_VERSION:
        raise TrustFailure(f"{source}: not a version {CELL_VERSION} cell of goal {goal_id!r}")
    raw.pop("mac", None)
    return _cell_from(raw, source)


def _spend_from(raw: Any, source: str, key: str, positive: bool) -> Spend:
    try:
        spend = Spend(**raw)
    except TypeError:
        raise TrustFailure(f"{source}: {key}: malformed budget record") from None
    for name, value in asdict(spend).items():
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
)


# Fields added within format version 1; a cell written before them reads as their default.
_OPTIONAL: dict[str, Any] = {
    "gate_commit": None,
    "owners_commit": None,
    "destructive": [],
    "destructive_detail": None,
    "approved_classes": [],
    "sessions": [],
    "lessons_given": [],
}


def _cell_from(raw: dict[str, Any], source: str) -> Cell:
    raw = _OPTIONAL | raw
    try:
        raw.pop("v")
        pos = raw.pop("position")
        flight = raw.pop("in_flight")
        fields: dict[str, Any] = {k: v for k, v in raw.items() if k not in _TUPLES}
        fields.update({name: tuple(raw[name]) for name in _TUPLES[2:]})
        fields["sessions"] = tuple((str(n), c, int(t)) for n, c, t in raw["sessions"])
        cell = Cell(
            **fields,
            used=_spend_from(raw["used"], source, "used", positive=False),
            limit=_spend_from(raw["limit"], source, "limit", positive=raw["status"] != "pending"),
            position=Position(int(pos["seq"]), str(pos["hash"])),
            in_flight=InFlight(**flight) if flight is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise TrustFailure(f"{source}: the cell's fields are malformed ({exc})") from None
    if cell.status not in STATUSES:
        raise TrustFailure(f"{source}: status: unknown status {cell.status!r}")
    return cell


def read_cell(path: Path, source: str, goal_id: str, key: bytes) -> Cell | None:
    """The cell at `path`, or None when there is none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_cell(data, source, goal_id, key)
