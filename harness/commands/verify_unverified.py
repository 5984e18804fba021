"""`harness verify` in a reviewer clone (no secret): every check that needs none.

Checked: each line's shape, sequence and hash chain from the first event (an edited,
dropped or reordered line breaks it); the cell's ledger position is an event the chain
holds; the goal file bytes the cell names carry an owner's approval (an SSH signature,
checked against the owners on the control ref). Not checked: the MACs, so a whole chain
rewritten by someone with write access to the branch reads as honest here; a runner, which
has the secret, refuses it before acting (reviewer.py; trust.md, "A reviewer clone").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.commands.remote_goal import goal_ref
from harness.commands.reviewer import check_signed_tree, vouch_record
from harness.errors import HarnessError, TrustFailure
from harness.loop.control import Control
from harness.record.cell import peek_cell
from harness.record.ledger import LedgerBroken, Record
from harness.record.locate import NoRecord, locate
from harness.record.position import START, Position
from harness.record.unverified import MACS_UNCHECKED, UnverifiedLedger
from harness.store.gitrepo import Repo
from harness.trust.approvals import find_run_approval
from harness.trust.checkpoint import Vouched

NOT_CHECKED = "no secret here: MACs not checked; chain, cell position and approval checked"


def verify_unverified(
    repo: Repo, control: Control, goal_id: str, remote_ref: str | None
) -> dict[str, Any]:
    try:
        return _check(repo, control, goal_id, remote_ref)
    except HarnessError as exc:
        return failed(goal_id, exc)


def _check(repo: Repo, control: Control, goal_id: str, remote_ref: str | None) -> dict[str, Any]:
    branch = control.branch(goal_id)
    with locate(repo, goal_id, branch, remote_ref) as found:
        chain: dict[int, str] = {}
        segments: set[str] = set()
        last: Record | None = None
        for record in UnverifiedLedger(found.paths.events, goal_id).records():
            chain[record.event.seq] = record.hash
            segments.add(record.segment)
            last = record
        source = f"ledger/{goal_id}/state.json"
        data = found.paths.cell.read_bytes() if found.paths.cell.is_file() else None
        head = Position(last.event.seq, last.hash) if last is not None else START
        signed = vouch_record(control, found.paths, head, data) if data is not None else None
    if data is None:
        raise TrustFailure(f"{source}: missing (expected the goal's cell beside its ledger)")
    cell = peek_cell(data, source, goal_id)
    if signed is not None and found.origin != "checkout":  # a copied folder has no commit
        ref = "HEAD" if found.origin == "worktree" else goal_ref(repo, control, goal_id)
        root = found.paths.root if found.origin == "worktree" else repo.root
        check_signed_tree(root, ref or "HEAD", branch, signed.checkpoint.tree, signed.text)
    at = cell.position
    if at != START and chain.get(at.seq) != at.hash:
        raise TrustFailure(
            f"{source}: names event {at.seq} ({at.hash[:16]}), which the ledger's chain does "
            f"not hold (it ends at {head.seq}): the cell or the ledger was edited"
        )
    if cell.goal_sha256 is not None:
        approval = f"goals/{goal_id}.approval"
        records = control.approvals(goal_id)
        find_run_approval(records, control.owners(), goal_id, cell.goal_sha256, approval)
    notes = []
    if head.seq > at.seq:
        notes.append(f"{head.seq - at.seq} event(s) after the cell (the next run rolls forward)")
    return {
        "id": goal_id,
        "ok": True,
        "exit_code": 0,
        "events": len(chain),
        "segments": len(segments),
        "head": {"seq": head.seq, "hash": head.hash},
        "status": cell.status,
        "notes": notes,
        "verified": False,
        "unverified": NOT_CHECKED if signed is None else MACS_UNCHECKED,
    } | ({} if signed is None else {"runner": runner_json(signed)})


def runner_json(signed: Vouched) -> dict[str, Any]:
    """The runner whose signature a reviewer clone checked, for `--json`."""
    head = signed.checkpoint.head
    return {
        "principals": list(signed.runners),
        "fingerprint": signed.fingerprint,
        "head": {"seq": head.seq, "hash": head.hash},
    }


def failed(goal_id: str, exc: HarnessError) -> dict[str, Any]:
    """A goal's failed result; `never_run` when it has no record at all (not a failure of
    `verify` without ids: nothing was lost)."""
    failure: dict[str, Any] = {"message": str(exc)}
    if isinstance(exc, LedgerBroken):
        failure |= {"segment": Path(exc.path).name, "line": exc.line, "event": exc.seq}
    result = {"id": goal_id, "ok": False, "exit_code": exc.exit_code, "failure": failure}
    return result | ({"never_run": True} if isinstance(exc, NoRecord) else {})
