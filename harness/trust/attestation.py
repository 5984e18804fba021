"""The attestation bundle of a shipped goal: DSSE envelopes of in-toto Statements (issue 31).

One JSON Lines file, one envelope a line, in this order: SLSA provenance v1, the
test-result of the judge's last pass, the goal run (this project's predicate), each signed
by the runner's key; then the owner's ship decision, signed by the owner's own key when
they signed the decision (`shipenvelope.py`). Every statement's subject is the ship commit
and its tree; the owner's is the gate commit the decision binds to. Every field is
documented in docs/specs/attest.md, each predicate has its JSON Schema in
harness/model/schema/.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from harness import __version__
from harness.errors import InvalidInput
from harness.model.goal import Goal
from harness.record.cell import Spend
from harness.trust.attestfacts import RunFacts, Signed
from harness.trust.intoto import (
    BUILD_TYPE,
    GOAL_RUN,
    RUNNER,
    SLSA_PROVENANCE,
    TEST_RESULT,
    envelope_line,
    sign_statement,
    statement,
)
from harness.trust.runnerkey import RunnerKey


@dataclass(frozen=True)
class Shipped:
    """What ships: the ship commit (`HARNESS_SHIP_COMMIT`) and its tree."""

    commit: str
    tree: str

    def subjects(self, goal_id: str) -> list[dict[str, Any]]:
        return [
            {"name": f"{goal_id}/ship-commit", "digest": {"gitCommit": self.commit}},
            {"name": f"{goal_id}/ship-commit^{{tree}}", "digest": {"gitTree": self.tree}},
        ]


def bundle(
    facts: RunFacts,
    goal: Goal,
    shipped: Shipped,
    key: RunnerKey,
    owner_envelope: Mapping[str, Any] | None,
) -> bytes:
    """The bundle's bytes: the runner's three envelopes, then the owner's (when given)."""
    subjects = shipped.subjects(facts.goal_id)
    made = [
        statement(subjects, SLSA_PROVENANCE, provenance(facts, goal, key)),
        statement(subjects, TEST_RESULT, test_result(facts, goal)),
        statement(subjects, GOAL_RUN, goal_run(facts)),
    ]
    private = key.private_key()
    lines = [envelope_line(sign_statement(s, private)) for s in made]
    if owner_envelope is not None:
        lines.append(envelope_line(owner_envelope))
    return b"".join(lines)


def builder_id(key: RunnerKey) -> str:
    return f"{RUNNER}#{key.fingerprint}"


def provenance(facts: RunFacts, goal: Goal, key: RunnerKey) -> dict[str, Any]:
    """SLSA provenance v1: the owner's inputs (goal file, its approval, the agent), the base
    it was built on, the runner that built it and the ledger head that records it."""
    goal_path = f"goals/{facts.goal_id}.yaml"
    head = facts.head
    return {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "goal": {"id": facts.goal_id, "path": goal_path, "sha256": facts.goal_sha256},
                "approval": _signed(facts.approval),
                "agent": {
                    "program": PurePosixPath(goal.build.run[0]).name,
                    "command": list(goal.build.run),
                    "format": goal.build.format,
                    "version": facts.agent_version,  # as the agent said it (attest.md)
                },
            },
            "resolvedDependencies": [
                {"name": "base", "digest": {"gitCommit": facts.base}},
                {"name": goal_path, "digest": {"sha256": facts.goal_sha256}},
            ],
        },
        "runDetails": {
            "builder": {"id": builder_id(key), "version": {"goal-harness": __version__}},
            "metadata": {
                "invocationId": f"ledger/{facts.goal_id}@{head}",
                "startedOn": facts.started,
                "finishedOn": facts.finished,
            },
            "byproducts": [
                {
                    "name": f"ledger/{facts.goal_id}@{head.seq}",
                    "digest": {"sha256": head.hash},
                    "annotations": {"seq": head.seq, "run": facts.run},
                }
            ],
        },
    }


def test_result(facts: RunFacts, goal: Goal) -> dict[str, Any]:
    """The in-toto test-result of the judge's last pass: the judge's command is its
    configuration; its JUnit counts, when the goal names a JUnit file, are in the
    configuration's annotations (the predicate's lists name tests; the record keeps counts)."""
    judge = facts.judge
    if judge is None:
        raise InvalidInput(f"goal {facts.goal_id}: no judge pass before the ship gate")
    annotations: dict[str, Any] = {
        "command": list(goal.judge.run),
        "ledger": f"{judge.seq}:{judge.hash}",
        "durationS": judge.duration_s,
    }
    if goal.judge.junit is not None:
        annotations["junitPath"] = goal.judge.junit
        if judge.junit is not None:
            annotations["junit"] = dict(judge.junit)
    return {
        "result": "PASSED",
        "configuration": [
            {
                "name": f"goals/{facts.goal_id}.yaml#judge",
                "digest": {"sha256": facts.goal_sha256},
                "annotations": annotations,
            }
        ],
    }


def goal_run(facts: RunFacts) -> dict[str, Any]:
    """This project's predicate for the run (docs/specs/attest.md, "goal-run")."""
    cell = facts.cell
    return {
        "goal": facts.goal_id,
        "goalSha256": facts.goal_sha256,
        "run": facts.run,
        "ledger": {"seq": facts.head.seq, "hash": facts.head.hash},
        "iterations": cell.iteration,
        "budget": {"used": _spend(cell.used), "limit": _spend(cell.limit)},
        "gates": [
            {
                "reason": g.reason,
                "status": g.status,
                "commit": g.commit,
                "seq": g.seq,
                "clearedBy": g.cleared_by,
            }
            for g in facts.gates
        ],
        "classesParkedOn": facts.classes,
        "decisions": [_signed(facts.approval), *(_signed(d) for d in facts.decisions)],
    }


def _spend(spend: Spend) -> dict[str, Any]:
    return {
        "iterations": spend.iterations,
        "seconds": spend.seconds,
        "costUsd": spend.cost_usd,
        "turns": spend.turns,
        "passes": spend.passes,
    }


def _signed(signed: Signed) -> dict[str, Any]:
    return {
        "decision": signed.decision,
        "signers": list(signed.signers),
        "fingerprint": signed.fingerprint,
        "signatureSha256": signed.signature_sha256,
        "gate": signed.gate,
        "commit": signed.commit,
        "ledger": signed.ledger,
        "seq": signed.seq,
    }
