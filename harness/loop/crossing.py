"""Crossing a gate: recording the use of a human's signed decision, and an owners rotation.

What the decision does (ship, unpark, extend the budget) is the fold's; this records that
it was used, by whom, bound to which commit and ledger head, and remembers the commit a
ship decision named, which is the only commit the ship step may check out.
"""

from __future__ import annotations

from typing import Any

from harness.loop import quarantine
from harness.loop.finish import Finisher
from harness.loop.shipcommit import make_ship_commit, ship_source
from harness.store.gitenv import step_git_env
from harness.trust.approvals import Approval
from harness.trust.decisions import extended_limits


class Crossing(Finisher):
    ship_from: str | None = None  # the gate commit a ship decision named, in this process

    def cross_gate(self, approval: Approval) -> None:
        """Record a signed decision's use; the fold moves the goal on."""
        self.ship_from = approval.commit if approval.decision == "ship" else None
        data: dict[str, Any] = {
            "decision": approval.decision,
            "gate": self.cell.gate,
            "signers": list(approval.signers),
            "commit": approval.commit,
            "ledger": approval.ledger,
            "signature_sha256": approval.signature_sha256,
        }
        if approval.decision.startswith("extend-budget "):
            data["limits"] = extended_limits(self.cell, approval.decision)
        if self.cell.gate == "secret_in_change":
            data |= self.let_in_held_files()
        self.emit("decision.used", None, self.cell.iteration, data)
        self.checkpoint(f"decision {approval.decision}")

    def let_in_held_files(self) -> dict[str, list[str]]:
        """The files the last build's `secret_in_change` held back, put in the worktree again
        (the checkpoint after the decision commits them), and those this clone lacks."""
        named: list[str] = []
        for record in self.ledger.records():
            event = record.event
            if event.type == "step.finished" and event.data.get("result") == "secret":
                named = quarantine.leak_paths(event.data.get("secrets", []))
        held = quarantine.folder(self.ctx.control.repo.harness_dir(), self.goal.id)
        restored, missing = quarantine.put_back(self.wt, named, held)
        self.fresh = None  # the worktree changed: the checkpoint scans it
        return {"restored": restored, "missing": missing}

    def spend_text(self, keys: list[str]) -> str:
        used, limit = self.cell.used, self.cell.limit
        return ", ".join(f"{key} {getattr(used, key)}/{getattr(limit, key)}" for key in keys)

    def out_of_budget(self) -> None:
        """A build is next and a budget is spent. A reached lifetime cap stops a recurring
        goal for good (`lifetime_exhausted`: a revision with a higher cap crosses it). A
        spent run budget: a one-shot goal waits for a human (extend-budget); a recurring
        goal's run ends, and the next comes at its time with a fresh allowance."""
        if self.cell.lifetime_hits():
            self.gate("needs_attention", "lifetime_exhausted", self.cell.lifetime_text())
            return
        detail = self.spend_text(self.cell.exhausted())
        if self.cell.every_s is None:
            self.gate("needs_attention", "budget_exhausted", detail)
            return
        data = {"detail": detail, "reason": "budget_exhausted"}
        self.emit("goal.failed", None, self.cell.iteration, data)
        self.checkpoint(f"run {self.cell.run} failed (budget_exhausted)")

    def rotate_owners(self, approval: Approval, owners_sha256: str, owners_commit: str) -> None:
        data = {
            "owners_sha256": owners_sha256,
            "owners_commit": owners_commit,
            "signers": list(approval.signers),
        }
        self.emit("owners.rotated", None, self.cell.iteration, data)
        self.checkpoint("owners rotated")

    def ship_env(self, signed: str) -> dict[str, str]:
        """The ship step's own variables: the goal's change as one commit on its base
        (`shipcommit.py`), the base, and the signed commit the checkout holds. Its git
        obeys no hook, replace ref or home's configuration (`gitenv.step_git_env`)."""
        source = ship_source(self.ledger.records())
        if source is None:  # no done gate at ship in the record: nothing to make it from
            return {"HARNESS_GATE_COMMIT": signed} | step_git_env()
        made = make_ship_commit(self.wt.path, self.goal.id, self.goal.objective, source, signed)
        return {
            "HARNESS_SHIP_COMMIT": made,
            "HARNESS_SHIP_BASE": source.base,
            "HARNESS_GATE_COMMIT": signed,
        } | step_git_env()
