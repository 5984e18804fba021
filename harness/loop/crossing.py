"""Crossing a gate: recording the use of a human's signed decision, and an owners rotation;
and the gate a spent budget stops at.

What the decision does (ship, unpark, extend the budget) is the fold's; this records that
it was used, by whom, bound to which commit and ledger head. The commit a ship decision
named, the only one the ship step may check out, is the runner's to remember
(`GoalRunner.cross_gate`).
"""

from __future__ import annotations

from typing import Any

from harness.loop import quarantine
from harness.loop.recorder import Recorder
from harness.record.cell import Cell
from harness.store.gitrepo import Repo
from harness.trust.approvals import Approval
from harness.trust.decisions import extended_limits


def cross_gate(rec: Recorder, approval: Approval, repo: Repo) -> None:
    """Record a signed decision's use; the fold moves the goal on. `repo`: where the files
    a `secret_in_change` gate held back are kept."""
    cell = rec.cell
    data: dict[str, Any] = {
        "decision": approval.decision,
        "gate": cell.gate,
        "signers": list(approval.signers),
        "commit": approval.commit,
        "ledger": approval.ledger,
        "signature_sha256": approval.signature_sha256,
    }
    if approval.decision.startswith("extend-budget "):
        data["limits"] = extended_limits(cell, approval.decision)
    if cell.gate == "secret_in_change":
        data |= let_in_held_files(rec, repo)
    rec.emit("decision.used", None, cell.iteration, data)
    rec.checkpoint(f"decision {approval.decision}")


def let_in_held_files(rec: Recorder, repo: Repo) -> dict[str, list[str]]:
    """The files the last build's `secret_in_change` held back, put in the worktree again
    (the checkpoint after the decision commits them), and those this clone lacks."""
    named: list[str] = []
    for record in rec.ledger.records():
        event = record.event
        if event.type == "step.finished" and event.data.get("result") == "secret":
            named = quarantine.leak_paths(event.data.get("secrets", []))
    held = quarantine.folder(repo.harness_dir(), rec.goal_id)
    restored, missing = quarantine.put_back(rec.wt, named, held)
    rec.fresh = None  # the worktree changed: the checkpoint scans it
    return {"restored": restored, "missing": missing}


def spend_text(cell: Cell, keys: list[str]) -> str:
    used, limit = cell.used, cell.limit
    return ", ".join(f"{key} {getattr(used, key)}/{getattr(limit, key)}" for key in keys)


def out_of_budget(rec: Recorder) -> None:
    """A build is next and a budget is spent. A reached lifetime cap stops a recurring
    goal for good (`lifetime_exhausted`: a revision with a higher cap crosses it). A
    spent run budget: a one-shot goal waits for a human (extend-budget); a recurring
    goal's run ends, and the next comes at its time with a fresh allowance."""
    cell = rec.cell
    if cell.lifetime_hits():
        rec.gate("needs_attention", "lifetime_exhausted", cell.lifetime_text())
        return
    detail = spend_text(cell, cell.exhausted())
    if cell.every_s is None:
        rec.gate("needs_attention", "budget_exhausted", detail)
        return
    data = {"detail": detail, "reason": "budget_exhausted"}
    rec.emit("goal.failed", None, cell.iteration, data)
    rec.checkpoint(f"run {rec.cell.run} failed (budget_exhausted)")


def rotate_owners(
    rec: Recorder, approval: Approval, owners_sha256: str, owners_commit: str
) -> None:
    data = {
        "owners_sha256": owners_sha256,
        "owners_commit": owners_commit,
        "signers": list(approval.signers),
    }
    rec.emit("owners.rotated", None, rec.cell.iteration, data)
    rec.checkpoint("owners rotated")
