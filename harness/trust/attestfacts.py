"""What an attestation says of a goal run, read from its ledger alone (issue 31).

The attested record ends at the last `decision.used` of a `ship` decision: the owner's
signature crossing the ship gate. Everything after it (the ship step, its outcome) is not
how the shipped commit was made, and cutting there makes the bundle the ship step is given
and the one `harness attest` writes later the same bytes (docs/specs/attest.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.errors import InvalidInput, TrustFailure
from harness.record.cell import Cell
from harness.record.changes import base_after
from harness.record.fold import fold
from harness.record.ledger import Event, Record
from harness.record.position import Position
from harness.trust.approvals import SignedRecord
from harness.trust.runnerkey import fingerprint
from harness.trust.sshsig import verify


@dataclass(frozen=True)
class Signed:
    """A decision as the record has it, with the fingerprint of the key that signed it."""

    decision: str
    signers: tuple[str, ...]
    fingerprint: str
    signature_sha256: str
    gate: str | None
    commit: str | None
    ledger: str | None
    seq: int  # the event that used it (`goal.started` for the run approval)


@dataclass(frozen=True)
class Gate:
    reason: str
    status: str
    commit: str
    seq: int
    cleared_by: int | None  # the seq of the decision.used that crossed it


@dataclass(frozen=True)
class JudgePass:
    seq: int
    hash: str
    duration_s: float
    junit: Mapping[str, int] | None


@dataclass(frozen=True)
class RunFacts:
    goal_id: str
    run: int
    goal_sha256: str
    base: str
    head: Position  # the ship decision's decision.used: the attested record's last line
    started: str  # the run's first event's time
    finished: str  # the head's time
    cell: Cell  # the fold up to the head: iterations, budget used and limits
    approval: Signed
    decisions: tuple[Signed, ...]
    gates: tuple[Gate, ...]
    judge: JudgePass | None
    agent_version: str | None = None  # the last build's, as the agent reported it

    @property
    def ship(self) -> Signed:
        return self.decisions[-1]

    @property
    def classes(self) -> list[str]:
        """The destructive classes the run parked on, in order, once each."""
        found = [
            g.reason.split(":", 1)[1] for g in self.gates if g.reason.startswith("destructive:")
        ]
        return list(dict.fromkeys(found))


def attested(records: Iterable[Record], goal_id: str) -> list[Record]:
    """The records up to the last ship decision's use; InvalidInput naming what is missing."""
    every = list(records)
    last = max(
        (i for i, r in enumerate(every) if _ship_used(r.event)),
        default=None,
    )
    if last is not None:
        return every[: last + 1]
    if any(_ship_gate(r.event) for r in every):
        raise InvalidInput(
            f"goal {goal_id}: waits at its ship gate: no ship decision has been used yet "
            f"(expected `harness ship {goal_id} --key KEY` and the runner acting on it)"
        )
    if any(
        r.event.type == "goal.started" and "ship" not in r.event.data.get("steps", [])
        for r in every[:1]
    ):
        raise InvalidInput(f"goal {goal_id}: has no ship step: nothing of it ships to attest")
    raise InvalidInput(
        f"goal {goal_id}: has not reached its ship gate (expected a goal that passed its done "
        "gate and was shipped by an owner's decision)"
    )


def _ship_used(event: Event) -> bool:
    return event.type == "decision.used" and event.data.get("decision") == "ship"


def _ship_gate(event: Event) -> bool:
    return event.type == "goal.gated" and event.data.get("reason") == "ship"


def signature_keys(approvals: Sequence[SignedRecord], source: str) -> dict[str, bytes]:
    """Each approval record's signature SHA-256 (as `decision.used` names it) → the key whose
    signature over its statement verifies. A record that does not verify is left out."""
    import hashlib

    keys: dict[str, bytes] = {}
    for record in approvals:
        try:
            key = verify(record.statement_bytes, record.armored)
        except TrustFailure:
            continue
        keys[hashlib.sha256(record.armored.encode()).hexdigest()] = key
    return keys


def run_facts(
    records: Sequence[Record], goal_id: str, approvals: Sequence[SignedRecord]
) -> RunFacts:
    """The facts of the run the last record (a ship decision's use) belongs to."""
    source = f"goals/{goal_id}.approval"
    keys = signature_keys(approvals, source)
    head = records[-1]
    run = head.event.run
    base: str | None = None
    started: Event | None = None
    opening: Event | None = None
    for record in records:
        event = record.event
        base = base_after(base, event)
        if event.type in ("goal.started", "goal.revised"):
            opening = event
        if event.run == run and started is None:
            started = event
    if opening is None or base is None or started is None:
        raise InvalidInput(f"ledger/{goal_id}: no goal.started before the ship decision")
    in_run = [r for r in records if r.event.run == run]
    decisions = tuple(_signed(r, keys, source) for r in in_run if r.event.type == "decision.used")
    cell = fold(goal_id, ((r.event, Position(r.event.seq, r.hash)) for r in records))
    return RunFacts(
        goal_id=goal_id,
        run=run,
        goal_sha256=str(opening.data["goal_sha256"]),
        base=base,
        head=Position(head.event.seq, head.hash),
        started=started.ts,
        finished=head.event.ts,
        cell=cell,
        approval=_run_approval(opening, approvals, keys, goal_id),
        decisions=decisions,
        gates=_gates(in_run),
        judge=_judge_pass(in_run),
        agent_version=_agent_version(in_run),
    )


def _signed(record: Record, keys: Mapping[str, bytes], source: str) -> Signed:
    data = record.event.data
    sha = str(data.get("signature_sha256"))
    key = keys.get(sha)
    if key is None:
        raise TrustFailure(
            f"{source}: no record whose signature verifies is the one event "
            f"{record.event.seq} used (signature sha256 {sha[:12]}…): the file was rewritten"
        )
    return Signed(
        decision=str(data["decision"]),
        signers=tuple(data.get("signers") or ()),
        fingerprint=fingerprint(key),
        signature_sha256=sha,
        gate=data.get("gate"),
        commit=data.get("commit"),
        ledger=data.get("ledger"),
        seq=record.event.seq,
    )


def _run_approval(
    opening: Event, approvals: Sequence[SignedRecord], keys: Mapping[str, bytes], goal_id: str
) -> Signed:
    """The newest run approval of the goal file bytes the run was made under."""
    import hashlib

    sha = opening.data["goal_sha256"]
    for record in reversed(approvals):
        statement = record.statement
        signature = hashlib.sha256(record.armored.encode()).hexdigest()
        if (statement.goal, statement.sha256, statement.decision) != (goal_id, sha, "run"):
            continue
        if signature in keys:
            return Signed(
                decision="run",
                signers=tuple(opening.data.get("approved_by") or ()),
                fingerprint=fingerprint(keys[signature]),
                signature_sha256=signature,
                gate=None,
                commit=None,
                ledger=None,
                seq=opening.seq,
            )
    raise TrustFailure(
        f"goals/{goal_id}.approval: no verifying run approval of the goal file the run was "
        f"made under (sha256 {str(sha)[:12]}…)"
    )


def _gates(in_run: Sequence[Record]) -> tuple[Gate, ...]:
    gates: list[Gate] = []
    for record in in_run:
        event = record.event
        if event.type == "goal.gated":
            data = event.data
            gate = Gate(
                str(data["reason"]), str(data["status"]), str(data["commit"]), event.seq, None
            )
            gates.append(gate)
        elif event.type == "decision.used" and gates and gates[-1].cleared_by is None:
            last = gates[-1]
            if event.data.get("gate") == last.reason:
                gates[-1] = Gate(last.reason, last.status, last.commit, last.seq, event.seq)
    return tuple(gates)


def _agent_version(in_run: Sequence[Record]) -> str | None:
    """The version the run's last build that said one reported (step.finished data)."""
    found = None
    for record in in_run:
        event = record.event
        if event.type == "step.finished" and event.step == "build":
            value = event.data.get("agent_version")
            found = value if isinstance(value, str) else found
    return found


def _judge_pass(in_run: Sequence[Record]) -> JudgePass | None:
    """The judge's last pass of the run, before the ship gate."""
    found: JudgePass | None = None
    for record in in_run:
        event, data = record.event, record.event.data
        if event.type == "step.finished" and event.step == "judge" and data.get("result") == "pass":
            junit = data.get("junit")
            found = JudgePass(
                event.seq,
                record.hash,
                float(data.get("duration_s") or 0.0),
                dict(junit) if isinstance(junit, dict) else None,
            )
    return found
