"""`harness status`: one line per goal, read from each goal's cell without checking out."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from harness.commands.remote_goal import UNVERIFIED, remote_goal_branches, secret_here
from harness.commands.session import Session, nothing_notes, open_session
from harness.errors import HarnessError, InvalidInput
from harness.loop.clock import SystemClock
from harness.loop.contain.sandbox import notice
from harness.loop.control import Control
from harness.loop.runnable import runnable
from harness.model.goalid import GOAL_ID_RE
from harness.model.limits import show_duration
from harness.record.cell import Cell, Unavailable, parse_cell, peek_cell, rule_counts_json
from harness.record.events import TERMINAL, WAITING
from harness.record.locate import refuse_lost
from harness.record.render import unavailable_text
from harness.record.stale import is_stale, stale_after
from harness.record.unverified import MACS_UNCHECKED
from harness.record.visible import line, tidy_numbers
from harness.store.gitrepo import Repo
from harness.store.lock import GoalLock
from harness.store.objects import branches, read_blobs
from harness.store.recorded import recorded_goals
from harness.store.remote import runner_id
from harness.store.worktree import open_worktree
from harness.trust.approvals import NotApproved, find_run_approval
from harness.trust.checkpoint import vouch
from harness.trust.secret import Secret

PARKED_EXIT = 10
ATTENTION_EXIT = 11
STALE_EXIT = 12
BUDGET_KEYS = ("iterations", "seconds", "cost_usd", "turns", "passes")
# Gates that follow a step's own result: the cell's next step (judge after a tampering
# build) is where the goal would resume, not where it stopped (docs/specs/cli.md).
STEP_RESULT_GATES = frozenset({"tamper", "read_only_violation"})
MOVING = frozenset({"running", "paused", "pending"})


def status(
    cwd: Path,
    goal_ids: list[str],
    as_json: bool,
    check: bool,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO = sys.stderr,
) -> int:
    clock = SystemClock(env)  # a malformed HARNESS_NOW is refused before anything is read
    session = (
        open_session(cwd, env, goal_ids)
        if secret_here(env)
        else open_session(cwd, env, goal_ids, need_secret=False)
    )
    with session as opened:
        cells, rows = _rows(opened, goal_ids, clock.now())
        uncontained = notice(opened.control.config.sandbox, env)
        notes = [] if goal_ids else nothing_notes(opened.control, bool(rows), "goals")
        if check and opened.control.config.notify is not None:  # what monitors call
            _tell_stale(opened.repo, opened.control, cells, rows, env, err)
    if uncontained is not None:  # on stderr: stdout stays one line (or one object) per goal
        err.write(line(f"harness: {uncontained}"))
    err.writelines(line(f"harness: note: {note}") for note in notes)
    if as_json:
        out.write(json.dumps(tidy_numbers(rows), indent=2, sort_keys=True) + "\n")
    else:
        out.writelines(line(_line(row)) for row in rows)
    return _check_code(rows) if check else 0


def _tell_stale(
    repo: Repo,
    control: Control,
    cells: list[Cell],
    rows: list[dict[str, Any]],
    env: Mapping[str, str],
    err: TextIO,
) -> None:
    """The stale notification, once per stale spell (notify.md), for each stale row."""
    from harness.loop.notify import notify_stale

    for cell, row in zip(cells, rows, strict=True):
        if row["stale"]:
            notify_stale(repo, control.config, cell, env, err)


def _rows(
    session: Session[Secret] | Session[Secret | None], goal_ids: list[str], now: str
) -> tuple[list[Cell], list[dict[str, Any]]]:
    """One row per goal named, or per goal on the control ref or with a branch (a goal
    branch this clone has only as a remote's counts: remote_goal.remote_goal_branches)."""
    repo, control, secret = session.repo, session.control, session.secret
    prefix = control.config.branch_prefix
    heads, broken = branches(repo.root, prefix)
    local = set(heads)
    for goal_id, ref in remote_goal_branches(repo, prefix).items():
        if f"{prefix}{goal_id}" not in heads and (sha := repo.rev_parse(ref)) is not None:
            heads[f"{prefix}{goal_id}"] = sha
    kept = {g for g in recorded_goals(repo) if GOAL_ID_RE.fullmatch(g)}
    kept |= {b[len(prefix) :] for b in broken if GOAL_ID_RE.fullmatch(b[len(prefix) :])}
    known = sorted(set(control.goal_ids()) | {b[len(prefix) :] for b in heads} | kept)
    unknown = [goal_id for goal_id in goal_ids if goal_id not in known]
    if unknown:
        raise InvalidInput(
            f"goal {unknown[0]}: no goals/{unknown[0]}.yaml on {control.ref} and no goal branch "
            f"{prefix}{unknown[0]} (expected one of: {', '.join(known) or 'no goal yet'})"
        )
    ids = goal_ids or known
    _refuse_lost(repo, control, [g for g in ids if f"{prefix}{g}" not in local], kept)
    files = _cells(repo, control, ids, heads, with_signature=secret is None)
    cells = [
        _cell(control, goal_id, data, secret.goal_key(goal_id) if secret else None)
        for goal_id, (data, _) in zip(ids, files, strict=True)
    ]
    signed = {} if secret is not None else _signers(control, ids, files)
    # _waits_for_approval reads the goal and approval files of the goals still moving, and
    # runnable (_next) those of the goals at a gate: one git process for all of them, not
    # two requests a goal, each searching the `goals` tree again.
    control.prefetch_goal_files([c.goal for c in cells if c.status not in TERMINAL])
    locks = repo.harness_dir() / "locks"
    verified = secret is not None
    rows = [_row(repo, control, heads, locks, cell, verified, now) for cell in cells]
    return cells, [row | signed.get(row["id"], {}) for row in rows]


def _signers(
    control: Control, ids: list[str], files: list[tuple[bytes | None, bytes | None]]
) -> dict[str, dict[str, str]]:
    """Without the secret: the listed runner who signed each goal's cell (exit 3 for a cell
    none signed); nothing where the owners list no runners (trust/checkpoint.py)."""
    runners = control.runners()
    if runners is None:
        return {}
    return {
        goal_id: {"signed_by": vouch(goal_id, cell, signature, runners).text}
        for goal_id, (cell, signature) in zip(ids, files, strict=True)
        if cell is not None
    }


def _refuse_lost(repo: Repo, control: Control, without_branch: list[str], kept: set[str]) -> None:
    """Goals with no local branch that resolves whose record this clone kept (a worktree, a
    marker, a broken branch ref): the first whose branch is gone is refused in one line
    (exit 3), never shown as pending or read from a worktree git cannot resolve (cli.md,
    "A lost record")."""
    try:
        worktrees = set(os.listdir(repo.worktree_path("")))
    except OSError:
        worktrees = set()
    for goal_id in without_branch:
        if goal_id in worktrees or goal_id in kept:
            branch = control.branch(goal_id)
            open_worktree(repo, goal_id, branch)
            refuse_lost(repo, goal_id, branch)


def _cell(control: Control, goal_id: str, data: bytes | None, key: bytes | None) -> Cell:
    """The goal's cell, its MAC checked with `key` (read unverified without one)."""
    if data is None:
        return Cell(goal=goal_id)
    source = f"{control.branch(goal_id)}:ledger/{goal_id}/state.json"
    return parse_cell(data, source, goal_id, key) if key else peek_cell(data, source, goal_id)


def _cells(
    repo: Repo, control: Control, ids: list[str], heads: dict[str, str], with_signature: bool
) -> list[tuple[bytes | None, bytes | None]]:
    """Each goal's cell, and with `with_signature` the runner's checkpoint signature beside
    it: the worktree's (it may be ahead of the commit), else the branch's."""
    prefix = control.config.branch_prefix
    names = ("state.json", "checkpoint.sig") if with_signature else ("state.json",)
    found: dict[str, tuple[bytes | None, bytes | None]] = {}
    wanted = []
    try:  # one listing, not a stat per goal: most goals have no worktree here
        with_worktree = set(os.listdir(repo.worktree_path("")))
    except OSError:
        with_worktree = set()
    for goal_id in ids:
        local = repo.worktree_path(goal_id) / "ledger" / goal_id
        if goal_id in with_worktree and (local / "state.json").is_file():
            read = [_read_or_none(local / name) for name in names]
            found[goal_id] = (read[0], read[1] if with_signature else None)
        elif f"{prefix}{goal_id}" in heads:
            wanted.append(goal_id)
        else:
            found[goal_id] = (None, None)
    specs = [f"{heads[prefix + g]}:ledger/{g}/{name}" for g in wanted for name in names]
    blobs = iter(read_blobs(repo.root, specs))
    for goal_id in wanted:
        cell = next(blobs)
        found[goal_id] = (cell, next(blobs) if with_signature else None)
    return [found[g] for g in ids]


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _row(
    repo: Repo,
    control: Control,
    heads: dict[str, str],
    locks: Path,
    cell: Cell,
    verified: bool,
    now: str,
) -> dict[str, Any]:
    goal_id = cell.goal
    branch = control.branch(goal_id)
    shown = cell.status
    elsewhere = _elsewhere(repo, cell, now)
    # Only a running goal's lock changes what is shown (running, or paused when nobody
    # holds it); the probe is not made for the others.
    if shown == "running" and elsewhere is None and not _held(locks, goal_id):
        shown = "paused"
    stopped = shown not in MOVING
    # Pinned to the owners file it started under: until a pinned owner signs the change, no
    # decision applies and no step runs, whatever gate the cell shows (issue 18).
    moved = cell.status not in TERMINAL and control.owners_moved(cell)
    waits = _waits_for_approval(control, goal_id, cell)
    row = {
        "id": goal_id,
        "status": shown,
        "step": None if stopped and cell.gate in STEP_RESULT_GATES else cell.step,
        "iteration": _iteration(cell, stopped),
        "failing_test": cell.failing_test,
        "gate": cell.gate,
        "gate_detail": cell.gate_detail,
        "budget_used": {k: getattr(cell.used, k) for k in BUDGET_KEYS},
        "budget_limit": {k: getattr(cell.limit, k) for k in BUDGET_KEYS},
        "branch": branch,
        "head": heads.get(branch),
        "unavailable": asdict(cell.unavailable) if cell.unavailable else None,
        "elsewhere": elsewhere,
        "waiting_for_approval": waits,
        "approval_uncommitted": waits and _uncommitted_approval(repo, control, goal_id),
        "verified": verified,
        "owners_changed": moved,
        "warned": list(cell.warned),
        "rules": rule_counts_json(cell),
        "advanced_at": cell.advanced_at,
        "stale_after_s": stale_after(cell),
        "stale": not (waits or moved) and is_stale(cell, now),
    }
    return row | _next(control, cell, shown, elsewhere is not None or waits, now) | _recurring(cell)


def _uncommitted_approval(repo: Repo, control: Control, goal_id: str) -> bool:
    """Whether the working copy's approval file differs from the control branch's: an
    approval made here and not committed, which no runner can see."""
    rel = f"goals/{goal_id}.approval"
    try:
        here = (repo.root / rel).read_bytes()
    except OSError:
        return False
    return here != (repo.read_blob(control.ref, rel) or b"")


def _next(
    control: Control, cell: Cell, shown: str, held_or_waiting: bool, now: str
) -> dict[str, Any]:
    """What the goal needs next (cli.md): whether `harness run` now would move it, whether
    it waits for a human's signed decision, when a recurring goal's next run is due. A goal
    another process runs (its lock held here, a live lease elsewhere) or waiting for its run
    approval is not runnable; the approval is `waiting_for_approval`'s."""
    moves = shown != "running" and not held_or_waiting and runnable(control, cell.goal, cell, now)
    return {
        "runnable": moves,
        "decision_pending": cell.status in WAITING and not moves,
        "next_run_due": cell.next_run_due(),
    }


def _held(locks: Path, goal_id: str) -> bool:
    """Whether another process holds the goal's lock now (a read-only probe)."""
    return GoalLock(locks, goal_id).held_elsewhere()


def _recurring(cell: Cell) -> dict[str, Any]:
    """A recurring goal's run, when its next run is due (not before the run ends), and its
    spend over all runs with the caps; no keys at all for a one-shot goal."""
    if cell.every_s is None:
        return {}
    used, caps = cell.lifetime_used, cell.lifetime_limit
    return {
        "run": cell.run,
        "every_s": cell.every_s,
        "run_started_at": cell.run_started_at,
        "lifetime_used": asdict(used) if used else None,
        "lifetime_limit": {k: v for k, v in asdict(caps).items() if v is not None} if caps else {},
    }


def _elsewhere(repo: Repo, cell: Cell, now: str) -> dict[str, str] | None:
    """The step another clone started and may still be running (its lease has not run
    out), as this clone last fetched the branch: that goal is not paused."""
    flight = cell.in_flight
    if cell.status != "running" or flight is None:
        return None
    if not flight.held_elsewhere(runner_id(repo), lambda: now):
        return None  # this clone's, or that runner is gone: the next run here takes it over
    step = f"{flight.step}[{flight.iteration}]"
    return {"step": step, "runner": flight.runner, "lease_until": flight.lease_until}


def _iteration(cell: Cell, stopped: bool) -> int:
    """A stopped goal shows the last round that ran, not the next one it is waiting to
    start (after `budget_exhausted (iterations 3/3)` that is 3, not 4)."""
    ran = cell.used.iterations
    return min(cell.iteration, ran) if stopped and ran >= 1 else cell.iteration


def _waits_for_approval(control: Control, goal_id: str, cell: Cell) -> bool:
    """Whether `harness run` would skip the goal as not (re-)approved yet (cli.md).

    Only for a goal not finished and not already at a gate (the gate says what it waits
    for); a broken or forged approval is not "waiting": `run` refuses it (exit 3). A
    recurring goal between runs is not finished: its next run waits for the approval."""
    if cell.status in WAITING or (cell.status in TERMINAL and cell.every_s is None):
        return False
    try:
        sha256 = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest()
        source = f"goals/{goal_id}.approval"
        find_run_approval(control.approvals(goal_id), control.owners(), goal_id, sha256, source)
    except NotApproved:
        return True
    except HarnessError:
        return False  # no goal file, a broken approval: `check` and `run` name it
    return False


def _line(row: Mapping[str, Any]) -> str:
    used, limit = row["budget_used"], row["budget_limit"]
    budget = " ".join(f"{k}={_num(used[k])}/{_num(limit[k])}" for k in BUDGET_KEYS)
    shown = (
        f"{row['id']} {row['status']} step={row['step'] or '-'} iteration={row['iteration']} "
        f"failing={row['failing_test'] or '-'} budget: {budget} gate={row['gate'] or '-'}"
    )
    elsewhere = row.get("elsewhere")
    if elsewhere:
        shown += (
            f" elsewhere: {elsewhere['step']} by {elsewhere['runner']} (lease until "
            f"{elsewhere['lease_until']}), as last fetched: `git fetch` to see newer"
        )
    shown += _gate_told(row)
    warned = row.get("warned")
    if warned:
        more = f", +{len(warned) - 1} more" if len(warned) > 1 else ""
        shown += f" warned={len(warned)} ({warned[0]}{more}; enforce: warn, not a gate)"
    if row.get("stale"):
        shown += (
            f" stale (nothing advanced it since {row['advanced_at']}, longer than "
            f"halt.stale_after {show_duration(row['stale_after_s'])}: is its runner still scheduled?)"
        )
    if "run" in row:
        shown += f" run={row['run']} next_run_due={row['next_run_due']}"
        caps, used = row["lifetime_limit"], row["lifetime_used"] or {}
        if caps:
            shown += " lifetime: " + " ".join(f"{k}={_num(used[k])}/{_num(caps[k])}" for k in caps)
    if row.get("approval_uncommitted"):
        shown += (
            f" waiting for approval (goals/{row['id']}.approval in the working copy is not"
            " committed: commit it, and push it, so the runners see it)"
        )
    elif row.get("waiting_for_approval"):
        shown += f" waiting for approval (run `harness approve {row['id']} --key KEY`)"
    shown += _checked(row)
    unavailable = row.get("unavailable")
    if unavailable:
        shown = f"{shown} {unavailable_text(Unavailable(**unavailable))}"
    if row.get("owners_changed"):
        shown += (
            " blocked=owners_changed (.harness/owners changed since it started: "
            f"`harness rotate-owners {row['id']} --key K` with a key it started under)"
        )
    return shown


def _checked(row: Mapping[str, Any]) -> str:
    """What a clone without the secret could check of the row (nothing to say with it)."""
    if row.get("signed_by"):
        return f" ({row['signed_by']}; {MACS_UNCHECKED})"
    return f" (unverified: {UNVERIFIED})" if row.get("verified") is False else ""


def _gate_told(row: Mapping[str, Any]) -> str:
    """What a gate's detail adds to the line, for the gates whose fix it names."""
    detail = row.get("gate_detail")
    if row["gate"] == "ship_failed" and detail:
        # What a failed ship printed, on the same line: the owner fixes it and ships again.
        return " " + " | ".join(detail.split("\n")[-3:])
    if row["gate"] == "agent_unavailable" and detail and not row.get("unavailable"):
        # A build command that could not run: which program, and what to do (loop.md).
        return " " + " ".join(detail.split())
    return ""


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check_code(rows: list[dict[str, Any]]) -> int:
    statuses = {row["status"] for row in rows}
    if "parked_at_eyes" in statuses:
        return PARKED_EXIT
    if "needs_attention" in statuses or any(row.get("owners_changed") for row in rows):
        return ATTENTION_EXIT
    if any(row.get("stale") for row in rows):
        return STALE_EXIT
    return 0
