"""`harness run`: advance every approved, runnable goal until it stops."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from harness.approval import SignedRecord, Verdict, verify_record
from harness.cell import TERMINAL, WAITING, Cell, parse_cell
from harness.control import Control, open_control
from harness.controller import (
    ChildRecord,
    Clock,
    GoalRunner,
    RunContext,
    SystemClock,
    interruptible,
)
from harness.decisions import bound_to, find_decision
from harness.errors import Busy, HarnessError, InvalidInput, TrustFailure
from harness.gitrepo import Repo
from harness.goal import Goal, check_goal_id
from harness.hydrate import GoalPaths, committed_view, load
from harness.lock import GoalLock
from harness.remote import Remote, runner_id
from harness.secret import load_secret
from harness.workspace import branch_name, ensure_worktree, open_worktree


def run(
    cwd: Path,
    goal_ids: list[str],
    max_steps: int | None,
    push: str | None,
    env: Mapping[str, str],
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    clock: Clock | None = None,
    jobs: int = 1,
    as_json: bool = False,
) -> int:
    if max_steps is not None and max_steps < 1:
        raise InvalidInput(f"--max-steps: {max_steps} (expected a whole number ≥ 1)")
    if jobs < 1:
        raise InvalidInput(f"--jobs: {jobs} (expected a whole number ≥ 1)")
    for goal_id in goal_ids:
        check_goal_id(goal_id, "goal id")  # before any lock file or worktree path is made
    repo = Repo.discover(cwd)
    secret = load_secret(env, repo.root)
    control = open_control(repo)
    remote = Remote.check(repo, push) if push is not None else None
    if remote is not None:
        remote.fetch(control.config.branch_prefix)
    ids = goal_ids or control.goal_ids()
    if jobs > 1 and len(ids) > 1 and not as_json:
        options = [*(["--max-steps", str(max_steps)] if max_steps else [])]
        options += ["--push", push] if push else []
        return _overall(run_parallel(repo.root, ids, options, jobs, env, out, err))
    lines: list[str] = []

    def print_line(line: str) -> None:
        lines.append(line)
        if not as_json:
            out.write(line)
            out.flush()

    terminal = err if err.isatty() and not as_json else None
    ctx = RunContext(
        control,
        secret,
        clock or SystemClock(),
        print_line,
        env,
        max_steps,
        remote,
        runner_id(repo),
        terminal,
    )
    outcomes = []
    with interruptible():
        for goal_id in ids:
            before = len(lines)
            outcome = _run_one(repo, ctx, goal_id, err, quiet=as_json)
            outcome["lines"] = lines[before:]
            outcomes.append(outcome)
            if outcome["lines"]:
                _step_summary(env, repo, goal_id)
    code = _overall([o["exit_code"] for o in outcomes])
    if as_json:
        out.write(json.dumps({"exit_code": code, "goals": outcomes}, indent=2) + "\n")
    return code


def _step_summary(env: Mapping[str, str], repo: Repo, goal_id: str) -> None:
    """In GitHub Actions, each advanced goal's report goes into the job summary."""
    summary = env.get("GITHUB_STEP_SUMMARY")
    report = repo.worktree_path(goal_id) / "ledger" / goal_id / "report.md"
    if summary and report.is_file():
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(report.read_text(encoding="utf-8") + "\n")


def _overall(codes: list[int]) -> int:
    if any(code == TrustFailure.exit_code for code in codes):
        return TrustFailure.exit_code
    if codes and all(code == Busy.exit_code for code in codes):
        return Busy.exit_code
    return max((c for c in codes if c != Busy.exit_code), default=0)


def _run_one(repo: Repo, ctx: RunContext, goal_id: str, err: TextIO, quiet: bool) -> dict[str, Any]:
    lock = GoalLock(repo.harness_dir() / "locks", goal_id)
    try:
        with lock:
            cell = advance_goal(repo, ctx, goal_id)
    except HarnessError as exc:
        label = (
            "busy"
            if isinstance(exc, Busy)
            else "refused"
            if isinstance(exc, TrustFailure)
            else "error"
        )
        if not quiet:
            err.write(f"harness: {goal_id}: {label}: {exc}\n")
        return {"id": goal_id, "result": label, "exit_code": exc.exit_code, "message": str(exc)}
    return {"id": goal_id, "result": "ok", "exit_code": 0, "status": cell.status, "gate": cell.gate}


def run_parallel(
    root: Path,
    ids: list[str],
    options: list[str],
    jobs: int,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO,
) -> list[int]:
    """Advance up to `jobs` goals at once, each in its own `harness run <id>` process.

    Separate processes keep every goal's lock, signals and failure its own; their lines are
    passed on whole, as they come.
    """
    import subprocess
    import threading
    from concurrent.futures import ThreadPoolExecutor

    guard = threading.Lock()

    def forward(stream: IO[str], sink: TextIO) -> None:
        for line in stream:
            with guard:
                sink.write(line)
                sink.flush()

    def one(goal_id: str) -> int:
        argv = [sys.executable, "-m", "harness", "run", goal_id, *options]
        proc = subprocess.Popen(
            argv, cwd=root, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stderr is not None
        errors = threading.Thread(target=forward, args=(proc.stderr, err))
        errors.start()
        forward(proc.stdout, out)
        errors.join()
        return proc.wait()

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, ids))


def advance_goal(
    repo: Repo, ctx: RunContext, goal_id: str, extra: Sequence[SignedRecord] = ()
) -> Cell:
    """Verify, then move one goal on. The caller holds its lock.

    `extra` holds decision records not yet on the control ref (a `harness ship` acting at
    once); they are checked exactly like the committed ones.
    """
    control = ctx.control
    resting = None if extra else _resting(repo, ctx, goal_id)
    if resting is not None:
        return resting
    goal = control.goal(goal_id, control.principals())
    lessons = control.lessons()
    verdict = _verdict(control, goal)
    # A run that died here may have left its step's processes and git's index.lock behind.
    ChildRecord(repo.harness_dir() / "locks", goal_id).end_leftover()
    repo.repair_worktree(repo.worktree_path(goal_id))
    if ctx.remote is not None:
        ctx.remote.sync(branch_name(control, goal_id), repo.worktree_path(goal_id))
    wt = open_worktree(repo, control, goal_id)
    if wt is None:
        if verdict is None:
            control.run_approval(goal)  # raises the precise refusal; nothing is created
        wt = ensure_worktree(repo, control, goal_id)
    wt.clear_stale_index_lock()
    paths = GoalPaths(wt.path, goal_id)
    loaded = load(paths, ctx.secret.goal_key(goal_id), committed_view(paths), repair=True)
    cell = loaded.cell
    if cell.status in TERMINAL:
        return cell
    runner = GoalRunner(ctx, goal, verdict, wt, paths, loaded, lessons)
    records = (*control.approvals(goal_id), *extra)
    started = cell.goal_sha256 is not None
    owners_moved = started and cell.owners_sha256 != control.owners_sha256
    if owners_moved and not _rotate(runner, control, records):
        _gate_unless_waiting(
            runner,
            "owners_changed",
            ".harness/owners changed after the goal started; the change must be "
            "signed by an owner the goal started under (decision rotate-owners)",
        )
        return runner.cell
    if verdict is None:
        if started and cell.goal_sha256 != goal.sha256:
            _gate_unless_waiting(
                runner,
                "goal_changed",
                f"goals/{goal_id}.yaml changed after the run began "
                f"(sha256 {goal.sha256[:12]}); approve the new version",
            )
            return runner.cell
        control.run_approval(goal)  # raises the precise refusal
    runner.start_or_revise(control.owners_sha256)
    if cell.status == "running" and runner.cell.status == "running":
        # It was left running by a process that is gone (a crash, a signal, --max-steps).
        runner.emit("goal.resumed", None, cell.iteration, {"runner": ctx.runner})
    if runner.cell.status in WAITING:
        source = f"goals/{goal_id}.approval"
        decision = find_decision(records, control.owners(), goal_id, runner.cell, source)
        if decision is None:
            return runner.cell
        runner.cross_gate(decision)
    return runner.advance()


def _resting(repo: Repo, ctx: RunContext, goal_id: str) -> Cell | None:
    """The goal's cell when this run has nothing to do for it, read without loading it.

    A finished goal, or one waiting at a gate whose goal file and owners are unchanged and
    for which no decision names its exact state, needs no ledger scan, no goal parsing and
    no git call. Anything else (or a cell that does not verify) takes the full path, which
    checks everything and refuses what it must.
    """
    path = repo.worktree_path(goal_id) / "ledger" / goal_id / "state.json"
    try:
        cell = parse_cell(path.read_bytes(), str(path), goal_id, ctx.secret.goal_key(goal_id))
    except (OSError, TrustFailure):
        return None
    if not _ends_whole(path.parent / "events"):
        return None  # a torn tail: the full path cuts it back
    if cell.status in TERMINAL:
        return cell
    control = ctx.control
    if cell.status not in WAITING or ctx.remote is not None:
        return None
    unchanged = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest() == cell.goal_sha256
    if not unchanged or control.owners_sha256 != cell.owners_sha256:
        return None
    if any(bound_to(record, goal_id, cell) for record in control.approvals(goal_id)):
        return None
    return cell


def _ends_whole(events: Path) -> bool:
    """Whether the last segment ends with a whole line (one byte read)."""
    segments = sorted(events.glob("*.jsonl"))
    if not segments:
        return False
    with segments[-1].open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _gate_unless_waiting(runner: GoalRunner, reason: str, detail: str) -> None:
    if runner.cell.status not in WAITING:
        runner.gate("needs_attention", reason, detail)


def _rotate(runner: GoalRunner, control: Control, records: Sequence[SignedRecord]) -> bool:
    """Accept the new owners file when an owner the goal is pinned to signed it (as in TUF)."""
    cell = runner.cell
    pinned = control.owners_at(cell.owners_commit, cell.owners_sha256)
    wanted = f"rotate-owners {control.owners_sha256}"
    for record in records:
        statement = record.statement
        if (statement.goal, statement.sha256, statement.decision) != (
            runner.goal.id,
            cell.goal_sha256,
            wanted,
        ):
            continue
        try:
            verdict = verify_record(record, pinned, f"goals/{runner.goal.id}.approval")
        except TrustFailure:
            continue
        runner.rotate_owners(verdict, control.owners_sha256, control.commit)
        return True
    return False


def _verdict(control: Control, goal: Goal) -> Verdict | None:
    """The valid run approval for these exact goal bytes, or None."""
    try:
        return control.run_approval(goal)
    except TrustFailure:
        return None
