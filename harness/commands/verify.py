"""`harness verify`: chain, MACs, cell binding and approvals; names the first bad event."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.approval import find_run_approval
from harness.control import Control, open_control
from harness.errors import HarnessError
from harness.gitrepo import Repo, branch_heads
from harness.hydrate import load
from harness.secret import Secret, load_secret
from harness.workspace import locate


def verify(cwd: Path, goal_ids: list[str], env: Mapping[str, str], out: TextIO) -> int:
    repo = Repo.discover(cwd)
    secret = load_secret(env, repo.root)
    control = open_control(repo)
    ids = goal_ids or _goals_with_records(repo, control)
    worst = 0
    for goal_id in ids:
        try:
            out.write(_verify_one(repo, control, secret, goal_id) + "\n")
        except HarnessError as exc:
            out.write(f"FAIL {goal_id}: {exc}\n")
            worst = max(worst, exc.exit_code)
    return worst


def _goals_with_records(repo: Repo, control: Control) -> list[str]:
    prefix = control.config.branch_prefix
    ids = {b[len(prefix) :] for b in branch_heads(repo.root, prefix)}
    ids |= (
        {p.name for p in (repo.root / "ledger").iterdir() if p.is_dir()}
        if (repo.root / "ledger").is_dir()
        else set()
    )
    return sorted(ids)


def _verify_one(repo: Repo, control: Control, secret: Secret, goal_id: str) -> str:
    with locate(repo, control, goal_id) as found:
        loaded = load(found.paths, secret.goal_key(goal_id), found.committed, repair=False)
    cell = loaded.cell
    if cell.goal_sha256 is not None:
        source = f"goals/{goal_id}.approval"
        records = control.approvals(goal_id)
        find_run_approval(records, control.owners(), goal_id, cell.goal_sha256, source)
    notes = []
    if loaded.torn is not None:
        notes.append(
            f"torn last line of {loaded.torn.length} bytes (a crash mid-append; the next run cuts it)"
        )
    if loaded.rolled_forward:
        notes.append(
            f"{loaded.rolled_forward} event(s) after the cell (a crash before the cell write; the next run rolls forward)"
        )
    head = cell.position
    extra = "; " + "; ".join(notes) if notes else ""
    return f"ok {goal_id}: {loaded.events} events, head {head.seq}:{head.hash[:16]}, status {cell.status}{extra}"
