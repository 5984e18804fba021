"""`harness status`: one line per goal, read from each goal's cell without checking out."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from harness.commands.session import Session, nothing_notes, open_session
from harness.loop.control import Control
from harness.loop.sandbox import notice
from harness.record.cell import Cell, Unavailable, parse_cell
from harness.record.events import TERMINAL
from harness.record.render import unavailable_text
from harness.record.visible import one_line
from harness.store.gitrepo import Repo
from harness.store.lock import GoalLock
from harness.store.objects import branch_heads, read_blobs
from harness.trust.secret import Secret

PARKED_EXIT = 10
ATTENTION_EXIT = 11
BUDGET_KEYS = ("iterations", "seconds", "cost_usd", "turns", "passes")


def status(
    cwd: Path,
    goal_ids: list[str],
    as_json: bool,
    check: bool,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO = sys.stderr,
) -> int:
    with open_session(cwd, env, goal_ids) as session:
        rows = _rows(session, goal_ids)
        uncontained = notice(session.control.config.sandbox, env)
        notes = [] if goal_ids else nothing_notes(session.control, bool(rows), "goals")
    if uncontained is not None:  # on stderr: stdout stays one line (or one object) per goal
        err.write(f"harness: {uncontained}\n")
    err.writelines(f"harness: note: {note}\n" for note in notes)
    if as_json:
        out.write(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    else:
        out.writelines(one_line(_line(row)) + "\n" for row in rows)
    return _check_code(rows) if check else 0


def _rows(session: Session[Secret], goal_ids: list[str]) -> list[dict[str, Any]]:
    """One row per goal named, or per goal on the control ref or with a branch."""
    repo, control, secret = session.repo, session.control, session.secret
    prefix = control.config.branch_prefix
    heads = branch_heads(repo.root, prefix)
    ids = goal_ids or sorted(set(control.goal_ids()) | {b[len(prefix) :] for b in heads})
    return [
        _row(repo, control, goal_id, heads, cell, secret.goal_key(goal_id))
        for goal_id, cell in zip(ids, _cells(repo, control, ids, heads), strict=True)
    ]


def _cells(
    repo: Repo, control: Control, ids: list[str], heads: dict[str, str]
) -> list[bytes | None]:
    """Each goal's cell: the worktree's (it may be ahead of the commit), else the branch's."""
    prefix = control.config.branch_prefix
    found: dict[str, bytes | None] = {}
    wanted = []
    for goal_id in ids:
        local = repo.worktree_path(goal_id) / "ledger" / goal_id / "state.json"
        if local.is_file():
            found[goal_id] = local.read_bytes()
        elif f"{prefix}{goal_id}" in heads:
            wanted.append(goal_id)
        else:
            found[goal_id] = None
    specs = [f"{heads[prefix + g]}:ledger/{g}/state.json" for g in wanted]
    found.update(zip(wanted, read_blobs(repo.root, specs), strict=True))
    return [found[g] for g in ids]


def _row(
    repo: Repo,
    control: Control,
    goal_id: str,
    heads: dict[str, str],
    data: bytes | None,
    key: bytes,
) -> dict[str, Any]:
    branch = f"{control.config.branch_prefix}{goal_id}"
    source = f"{branch}:ledger/{goal_id}/state.json"
    cell = parse_cell(data, source, goal_id, key) if data is not None else Cell(goal=goal_id)
    shown = cell.status
    if shown == "running" and not GoalLock(repo.harness_dir() / "locks", goal_id).held_elsewhere():
        shown = "paused"
    # Pinned to the owners file it started under: until a pinned owner signs the change, no
    # decision applies and no step runs, whatever gate the cell shows (issue 18).
    moved = cell.status not in TERMINAL and control.owners_moved(cell)
    return {
        "id": goal_id,
        "status": shown,
        "step": cell.step,
        "iteration": cell.iteration,
        "failing_test": cell.failing_test,
        "gate": cell.gate,
        "budget_used": {k: getattr(cell.used, k) for k in BUDGET_KEYS},
        "budget_limit": {k: getattr(cell.limit, k) for k in BUDGET_KEYS},
        "branch": branch,
        "head": heads.get(branch),
        "unavailable": asdict(cell.unavailable) if cell.unavailable else None,
        "owners_changed": moved,
    }


def _line(row: Mapping[str, Any]) -> str:
    used, limit = row["budget_used"], row["budget_limit"]
    budget = " ".join(f"{k}={_num(used[k])}/{_num(limit[k])}" for k in BUDGET_KEYS)
    line = (
        f"{row['id']} {row['status']} step={row['step'] or '-'} iteration={row['iteration']} "
        f"failing={row['failing_test'] or '-'} budget: {budget} gate={row['gate'] or '-'}"
    )
    unavailable = row.get("unavailable")
    if unavailable:
        line = f"{line} {unavailable_text(Unavailable(**unavailable))}"
    if row.get("owners_changed"):
        line += (
            " blocked=owners_changed (.harness/owners changed since it started: "
            f"`harness rotate-owners {row['id']} --key K` with a key it started under)"
        )
    return line


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check_code(rows: list[dict[str, Any]]) -> int:
    statuses = {row["status"] for row in rows}
    if "parked_at_eyes" in statuses:
        return PARKED_EXIT
    if "needs_attention" in statuses or any(row.get("owners_changed") for row in rows):
        return ATTENTION_EXIT
    return 0
