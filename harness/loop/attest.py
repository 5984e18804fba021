"""A shipped goal's attestation bundle, made from its record (docs/specs/attest.md).

`harness attest` and the ship step (`HARNESS_ATTESTATION`) both call `make_bundle`: the
record up to the ship decision's use, the goal file the run was made under, the ship commit
made from the record (`shipcommit.py`), the runner's key, and the owner's envelope of the
ship decision from `goals/<id>.dsse.jsonl` on the control ref.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import InvalidInput
from harness.loop.context import Pending
from harness.loop.control import Control
from harness.loop.shipcommit import make_ship_commit, ship_source
from harness.record.ledger import Record
from harness.store.gitrepo import run_git
from harness.trust.runnerkey import RunnerKey

if TYPE_CHECKING:
    from harness.model.goal import Goal

ENV_ATTESTATION = "HARNESS_ATTESTATION"
BUNDLE_NAME = "attestation.jsonl"
NONE_PENDING = Pending()


@dataclass(frozen=True)
class Bundle:
    data: bytes
    ship_commit: str
    notes: tuple[str, ...]  # what the bundle lacks, and why (the owner's envelope)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def make_bundle(
    control: Control,
    records: Sequence[Record],
    goal_id: str,
    git_dir: Path,
    key: RunnerKey,
    pending: Pending = NONE_PENDING,
) -> Bundle:
    """The bundle of the goal's last shipped run; InvalidInput naming what is missing (no
    ship decision used, no attest extra), TrustFailure where a signature does not hold."""
    from harness.trust.attestation import Shipped, bundle
    from harness.trust.attestfacts import attested, run_facts
    from harness.trust.intoto import require_attest
    from harness.trust.shipenvelope import envelope_path, find_decision_envelope, used_decision

    require_attest()
    cut = attested(records, goal_id)
    facts = run_facts(cut, goal_id, (*control.approvals(goal_id), *pending.records))
    goal = goal_made_under(control, goal_id, facts.goal_sha256)
    source = ship_source(cut)
    signed = facts.ship.commit
    if source is None or signed is None:
        raise InvalidInput(f"goal {goal_id}: the record names no done gate at ship to ship from")
    commit = make_ship_commit(git_dir, goal_id, goal.objective, source, signed)
    tree = run_git(["rev-parse", f"{commit}^{{tree}}"], git_dir).stdout.decode().strip()
    data = control.objects.blob(f"{control.commit}:{envelope_path(goal_id)}") or b""
    if data and not data.endswith(b"\n"):
        data += b"\n"
    data += pending.envelopes
    decision = used_decision(cut[-1].event.data, facts.goal_sha256, goal_id)
    found = find_decision_envelope(data, goal_id, decision, control.owners())
    made = bundle(facts, goal, Shipped(commit, tree), key, found.envelope)
    return Bundle(made, commit, (found.note,) if found.note else ())


def goal_made_under(control: Control, goal_id: str, sha256: str) -> Goal:
    """The goal file whose bytes hash to `sha256`: the control ref's, or an earlier version
    of it in the control ref's history (the goal was changed after it shipped)."""
    from harness.model.goal import read_goal

    source = f"goals/{goal_id}.yaml"
    data = _goal_bytes(control, source, sha256)
    goal, _ = read_goal(data, source, goal_id, control.config.defaults, None, None)
    return goal


def _goal_bytes(control: Control, source: str, sha256: str) -> bytes:
    current = control.objects.blob(f"{control.commit}:{source}")
    if current is not None and hashlib.sha256(current).hexdigest() == sha256:
        return current
    history = run_git(["log", "--format=%H", control.commit, "--", source], control.repo.root)
    for commit in history.stdout.decode().split():
        data = control.objects.blob(f"{commit}:{source}")
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
    raise InvalidInput(
        f"{source}: no version with sha256 {sha256[:12]}… on {control.ref} or in its history "
        "(expected the goal file the shipped run was made under)"
    )
