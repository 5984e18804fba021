"""`harness run`: advance every approved, runnable goal until it stops."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.commands.session import Session, nothing_notes, open_session
from harness.errors import (
    Busy,
    HarnessError,
    InvalidInput,
    TrustFailure,
    interruptible,
    invalid,
)
from harness.loop.control import Control
from harness.model.goalid import GOAL_ID_EXPECTED, goal_source
from harness.model.wording import show_value
from harness.record.cell import Cell, parse_cell
from harness.record.events import TERMINAL, WAITING
from harness.record.visible import block, line
from harness.store.gitrepo import GitError, Repo
from harness.store.lock import GoalLock
from harness.trust.approvals import NotApproved
from harness.trust.decisions import bound_to
from harness.trust.secret import Secret

# The loop itself (harness.loop.advance, the controller, the remote) is imported only when a
# goal has something to do: a run that finds every goal resting stays a short process.
if TYPE_CHECKING:
    import socket

    from harness.loop.clock import Clock
    from harness.loop.context import RunContext
    from harness.store.remote import Remote


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
    # The goal ids are checked before any lock file or worktree path is made from them.
    with open_session(cwd, env, goal_ids) as session:
        if push is None or not _follow_control(session, push):
            return _run(session, goal_ids, max_steps, push, env, out, err, clock, jobs, as_json)
    # The control branch moved: read goals, approvals and owners again at its new commit.
    with open_session(cwd, env, goal_ids) as session:
        return _run(session, goal_ids, max_steps, push, env, out, err, clock, jobs, as_json)


def _follow_control(session: Session[Secret], push: str) -> bool:
    """`--push REMOTE`: first bring the control branch to the remote's (remote.md)."""
    from harness.store.controlref import follow_control
    from harness.store.remote import Remote

    Remote.check(session.repo, push)
    return follow_control(session.repo, push, session.control.ref)


def _run(
    session: Session[Secret],
    goal_ids: list[str],
    max_steps: int | None,
    push: str | None,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO,
    clock: Clock | None,
    jobs: int,
    as_json: bool,
) -> int:
    repo, secret, control = session.repo, session.secret, session.control
    remote: Remote | None = None
    if push is not None:
        from harness.store.remote import Remote

        remote = Remote.check(repo, push)
        remote.fetch(control.config.branch_prefix)
    ids = goal_ids or spread(control.goal_ids(), repo, remote)
    misnamed = [] if goal_ids else control.misnamed_goal_files()
    notes = [] if goal_ids else nothing_notes(control, bool(ids or misnamed), "run")
    if not as_json:
        err.writelines(line(f"harness: note: {note}") for note in notes)
    outcomes = [_misnamed(stem, err, quiet=as_json) for stem in misnamed]
    if jobs > 1 and len(ids) > 1 and not as_json:
        options = [*(["--max-steps", str(max_steps)] if max_steps else [])]
        options += ["--push", push] if push else []
        from harness.commands.jobs import run_parallel

        codes = run_parallel(repo.root, ids, options, jobs, env, out, err)
        return _overall([*(o["exit_code"] for o in outcomes), *codes])
    lines: list[str] = []

    def print_line(text: str) -> None:  # an event line, made by render.text_line
        lines.append(text)
        if not as_json:
            out.write(text)
            out.flush()

    @functools.cache
    def context() -> RunContext:
        """The loop's context, made (and the loop imported) for the first goal that moves."""
        from harness.loop.clock import SystemClock
        from harness.loop.context import RunContext
        from harness.store.remote import runner_id

        terminal = err if err.isatty() and not as_json else None
        run_clock = clock or SystemClock()
        return RunContext(
            control,
            secret,
            run_clock,
            print_line,
            env,
            max_steps,
            remote,
            runner_id(repo),
            terminal,
        )

    def advance(goal_id: str) -> Cell:
        now = clock.now() if clock is not None else _now()
        cell = at_rest(repo, control, secret, remote, goal_id, now)
        if cell is not None:
            return cell
        from harness.loop.advance import advance_goal

        if control.config.notify is None:
            return advance_goal(repo, context(), goal_id)
        return _advance_and_tell(repo, context(), goal_id, advance_goal, None if as_json else err)

    with interruptible():
        for goal_id in ids:
            before = len(lines)
            outcome = _run_one(repo, goal_id, advance, err, quiet=as_json)
            outcome["lines"] = lines[before:]
            outcomes.append(outcome)
            if control.config.notify is not None and outcome["result"] != "waiting_for_approval":
                _tell_if_stale(session, goal_id, clock, env, None if as_json else err)
            if outcome["lines"]:
                _step_summary(env, repo, goal_id)
    return _report(outcomes, bool(lines), out, err, as_json)


def spread(ids: list[str], repo: Repo, remote: Remote | None) -> list[str]:
    """With `--push`, the goals in this runner's own order (remote.md, item 2), so runners
    started together each begin at another goal instead of all racing for the first one;
    alone, the sorted order."""
    if remote is None:
        return ids
    from harness.store.remote import runner_id

    return own_order(ids, f"{runner_id(repo)} {os.getpid()}")


def own_order(ids: list[str], runner: str) -> list[str]:
    """`ids` in an order of `runner`'s own: sorted by a hash of the runner and the goal.
    Two runners that meet at a goal (one takes it, the other finds it taken) then go on to
    different goals, where in one list rotated to each runner's start the second would
    trail the first and meet it again at every goal."""
    return sorted(ids, key=lambda goal: hashlib.sha256(f"{runner} {goal}".encode()).digest())


def _report(
    outcomes: list[dict[str, Any]], printed: bool, out: TextIO, err: TextIO, as_json: bool
) -> int:
    """The run's exit code; the JSON document, or the line saying why nothing moved."""
    code = _overall([o["exit_code"] for o in outcomes])
    idle = _nothing_ran(outcomes) if not printed and not as_json else None
    if idle is not None:
        err.write(line(f"harness: {idle}"))
    if as_json:
        out.write(json.dumps({"exit_code": code, "goals": outcomes}, indent=2) + "\n")
    return code


def _advance_and_tell(
    repo: Repo,
    ctx: RunContext,
    goal_id: str,
    advance_goal: Callable[[Repo, RunContext, str], Cell],
    err: TextIO | None,
) -> Cell:
    """Advance, then notify once if the goal moved into a state to tell (loop/notify.py)."""
    from harness.loop.notify import notify_transition, seen_before

    branch = ctx.control.branch(goal_id)
    remote_ref = ctx.remote.tracking(branch) if ctx.remote is not None else None
    before = seen_before(repo, branch, goal_id, remote_ref)
    cell = advance_goal(repo, ctx, goal_id)
    notify_transition(repo, ctx.control.config, goal_id, before, cell, ctx.base_env, err)
    return cell


def _tell_if_stale(
    session: Session[Secret],
    goal_id: str,
    clock: Clock | None,
    env: Mapping[str, str],
    err: TextIO | None,
) -> None:
    """After the run's turn at a goal (advanced, resting, busy or refused): the stale
    notification if its cell, as now recorded, is stale, and not yet told (notify.md)."""
    from harness.loop.clock import SystemClock  # a small module: the loop stays unimported
    from harness.record.stale import is_stale

    repo, control = session.repo, session.control
    source = f"ledger/{goal_id}/state.json"
    local = repo.worktree_path(goal_id) / source
    try:
        data = local.read_bytes() if local.is_file() else None
        if data is None:
            data = repo.read_blob(f"refs/heads/{control.branch(goal_id)}", source)
        if data is None:
            return
        cell = parse_cell(data, source, goal_id, session.secret.goal_key(goal_id))
    except (OSError, HarnessError):
        return  # no cell, or one that does not verify: the run itself names that
    if control.owners_moved(cell) or not is_stale(cell, (clock or SystemClock()).now()):
        return  # the common case (a goal at rest is not stale): nothing more is imported
    from harness.loop.notify import notify_stale

    notify_stale(repo, control.config, cell, env, err)


def _nothing_ran(outcomes: list[dict[str, Any]]) -> str | None:
    """One line when a run moved no goal because each waits for a human or has finished
    (stdout carries only event lines, so this goes to stderr)."""
    if not outcomes or any(o["result"] != "ok" for o in outcomes):
        return None
    if any(o["status"] not in WAITING | TERMINAL for o in outcomes):
        return None
    parts = [
        f"{o['id']} waits for a decision ({o['status']}, gate {o['gate']})"
        if o["status"] in WAITING
        else f"{o['id']} {o['status']}"
        + (f" (run {o['run']}; the next is due {o['next_run_due']})" if "run" in o else "")
        for o in outcomes
    ]
    return "nothing to run: " + "; ".join(parts)


def _step_summary(env: Mapping[str, str], repo: Repo, goal_id: str) -> None:
    """In GitHub Actions, each advanced goal's report goes into the job summary."""
    summary = env.get("GITHUB_STEP_SUMMARY")
    report = repo.worktree_path(goal_id) / "ledger" / goal_id / "report.md"
    if summary and report.is_file():
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(block(report.read_text(encoding="utf-8")) + "\n")


def _overall(codes: list[int]) -> int:
    if any(code == TrustFailure.exit_code for code in codes):
        return TrustFailure.exit_code
    if codes and all(code == Busy.exit_code for code in codes):
        return Busy.exit_code
    return max((c for c in codes if c != Busy.exit_code), default=0)


def _misnamed(stem: str, err: TextIO, quiet: bool) -> dict[str, Any]:
    """A `goals/*.yaml` file whose name is not a goal id: reported, never run or locked."""
    exc = invalid(goal_source(stem), "", "the file name is not a goal id", GOAL_ID_EXPECTED)
    if not quiet:
        err.write(line(f"harness: {show_value(stem)}: error: {exc}"))
    return {
        "id": stem,
        "result": "error",
        "exit_code": exc.exit_code,
        "message": str(exc),
        "lines": [],
    }


def _run_one(
    repo: Repo, goal_id: str, advance: Callable[[str], Cell], err: TextIO, quiet: bool
) -> dict[str, Any]:
    lock = GoalLock(repo.harness_dir() / "locks", goal_id)
    try:
        with lock:
            cell = advance(goal_id)
    except NotApproved as exc:
        return _waits_for_approval(goal_id, exc, err, quiet)
    except HarnessError as exc:
        label = (
            "busy"
            if isinstance(exc, Busy)
            else "refused"
            if isinstance(exc, TrustFailure)
            else "error"
        )
        if not quiet:
            err.write(line(f"harness: {goal_id}: {label}: {exc}"))
        return {"id": goal_id, "result": label, "exit_code": exc.exit_code, "message": str(exc)}
    waiting = cell.unavailable if cell.status == "running" and cell.unavailable else None
    if waiting is not None and waiting.retry_at is not None and not quiet:
        from harness.record.render import unavailable_text  # the renderer, only when shown

        err.write(line(f"harness: {goal_id}: waiting: {unavailable_text(waiting)}"))
    due = cell.next_run_due()  # a recurring goal's; no key for a one-shot goal
    return {
        "id": goal_id,
        "result": "ok",
        "exit_code": 0,
        "status": cell.status,
        "gate": cell.gate,
    } | ({"run": cell.run, "next_run_due": due} if due is not None else {})


def _waits_for_approval(goal_id: str, exc: NotApproved, err: TextIO, quiet: bool) -> dict[str, Any]:
    """Not approved yet (or edited since): a normal state, not a failure. Nothing was run or
    written for the goal; the others go on and the run exits 0 (cli.md)."""
    if not quiet:
        err.write(line(f"harness: {goal_id}: waiting for approval: {exc}"))
    return {"id": goal_id, "result": "waiting_for_approval", "exit_code": 0, "message": str(exc)}


def _now() -> str:
    """The wall time in the ledger's format (loop/clock.py's, without importing the loop)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def at_rest(
    repo: Repo, control: Control, secret: Secret, remote: Remote | None, goal_id: str, now: str
) -> Cell | None:
    """The goal's cell when this run has nothing to do for it, else None (the full path).
    With `--push` the branch may have moved on the remote: the resting answer holds when the
    local branch is where the remote's was fetched (nothing to sync), or when the remote's
    commit rests and the local branch only has to catch up to it."""
    if remote is None or remote.in_step(control.branch(goal_id), control.objects):
        return resting(repo, control, secret, goal_id, now)
    return caught_up(repo, control, secret, remote, goal_id, now)


def resting(repo: Repo, control: Control, secret: Secret, goal_id: str, now: str) -> Cell | None:
    """The goal's cell when this run has nothing to do for it, read without loading it.

    A finished goal (a recurring one whose next run is not due at `now`), or one waiting at
    a gate whose goal file and owners are unchanged and for which no decision names its
    exact state (`rests`), needs no ledger scan, no goal parsing and no git process of its
    own (the Control's `cat-file` reads its file and approvals). The cell is the worktree's
    when it holds the committed bytes and its ledger ends whole; with no worktree in this
    clone, the goal branch's committed one. Anything else (or a cell that does not verify)
    takes the full path, which checks everything and refuses what it must.
    """
    worktree = repo.worktree_path(goal_id)
    committed = f"refs/heads/{control.branch(goal_id)}"
    if not worktree.exists():
        cell = committed_cell(control, secret, goal_id, committed)
        return cell if cell is not None and rests(control, goal_id, cell, now) else None
    path = worktree / "ledger" / goal_id / "state.json"
    try:
        data = path.read_bytes()
        cell = parse_cell(data, str(path), goal_id, secret.goal_key(goal_id))
    except (OSError, TrustFailure):
        return None
    if not _ends_whole(path.parent / "events"):
        return None  # a torn tail: the full path cuts it back
    try:
        if control.objects.blob(f"{committed}:ledger/{goal_id}/state.json") != data:
            return None  # written but not committed (killed before the checkpoint's commit)
    except GitError:
        return None  # an unreadable object: the full path names it and refuses
    return cell if rests(control, goal_id, cell, now) else None


def caught_up(
    repo: Repo, control: Control, secret: Secret, remote: Remote, goal_id: str, now: str
) -> Cell | None:
    """With `--push`, a goal another clone brought to rest (`rests`), or whose step another
    clone runs under a live lease, while this clone's branch stayed behind: the branch (and
    its worktree, where this clone has one) is brought to the remote's commit as the sync
    would, and the goal answered for without loading it: its cell, or busy (remote.md, item
    3). A branch that is ahead, diverged or went back takes the full path, and so does
    anything this check cannot read."""
    branch = control.branch(goal_id)
    remote.refresh(branch)  # after a lost race, as the sync would (remote.md, item 3)
    if branch in remote.rewound:
        return None
    try:
        theirs = control.objects.commit_id(remote.tracking(branch))
        ours = control.objects.commit_id(f"refs/heads/{branch}")
    except GitError:
        return None
    if theirs is None:
        return None
    cell = committed_cell(control, secret, goal_id, theirs)
    if cell is None:
        return None
    held = _held_elsewhere(repo, control, goal_id, cell, now)
    if not held and not rests(control, goal_id, cell, now):
        return None
    if ours is not None and not repo.is_ancestor(ours, theirs):
        return None  # ahead or diverged: the sync pushes, or finds who won
    worktree = repo.worktree_path(goal_id)
    if worktree.exists():
        # As the full path does before its sync: a killed run's step processes are ended
        # and a half-made worktree removed before the worktree is touched.
        from harness.loop.guards import ChildRecord

        ChildRecord(repo.harness_dir() / "locks", goal_id).end_leftover()
        repo.repair_worktree(worktree)
    if not remote.catch_up(branch, worktree, ours, theirs):
        return None
    if held:
        assert cell.in_flight is not None
        raise Busy(f"goal {goal_id}: {cell.in_flight.holder_text()}")
    return cell


def _held_elsewhere(repo: Repo, control: Control, goal_id: str, cell: Cell, now: str) -> bool:
    """Whether another clone runs the goal's step under a live lease, with the goal file
    and owners as it started (a change there is the full path's to gate)."""
    from harness.store.remote import runner_id

    flight = cell.in_flight
    if (
        cell.status != "running"
        or flight is None
        or not flight.held_elsewhere(runner_id(repo), lambda: now)
    ):
        return False
    return _as_recorded(control, goal_id, cell)


def _as_recorded(control: Control, goal_id: str, cell: Cell) -> bool:
    """Whether the goal file and the owners are those the cell was recorded under."""
    unchanged = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest() == cell.goal_sha256
    return unchanged and control.owners_sha256 == cell.owners_sha256


def committed_cell(control: Control, secret: Secret, goal_id: str, rev: str) -> Cell | None:
    """The goal's cell as committed at `rev`, its MAC checked; None when absent, unreadable
    or not verifying (the full path then names what is wrong)."""
    source = f"{rev}:ledger/{goal_id}/state.json"
    try:
        data = control.objects.blob(source)
        if data is None:
            return None
        return parse_cell(data, source, goal_id, secret.goal_key(goal_id))
    except (GitError, TrustFailure):
        return None


def rests(control: Control, goal_id: str, cell: Cell, now: str) -> bool:
    """Whether nothing can move the goal now: finished (a recurring goal's next run not
    due), or waiting at a gate with its goal file and owners unchanged and no decision
    naming its exact state."""
    if cell.status in TERMINAL:
        return not cell.run_due(now)
    if cell.status not in WAITING:
        return False
    if not _as_recorded(control, goal_id, cell):
        return False
    return not any(bound_to(record, goal_id, cell) for record in control.approvals(goal_id))


def _ends_whole(events: Path) -> bool:
    """Whether the last segment ends with a whole line (one byte read)."""
    segments = sorted(events.glob("*.jsonl"))
    if not segments:
        return False
    with segments[-1].open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _requests(fd: int) -> Iterator[tuple[str, socket.socket]]:
    import socket  # a worker's only: a plain run does not pay its import

    with socket.socket(fileno=fd) as sock, sock.makefile("rb") as lines:
        for request in lines:
            yield request.decode("utf-8", "surrogateescape").rstrip("\n"), sock


def serve(
    fd: int,
    cwd: Path,
    max_steps: int | None,
    push: str | None,
    env: Mapping[str, str],
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """A worker of `run --jobs`: each goal id read from `fd` advanced as `harness run <id>`
    would, its exit code written back. Errors a run reports as one line are reported so
    here; anything else (a bug, a signal) ends the worker as it would end that run."""
    for goal_id, sock in _requests(fd):
        try:
            code = run(cwd, [goal_id], max_steps, push, env, out, err)
        except HarnessError as exc:
            err.write(line(f"harness: {exc}"))
            code = exc.exit_code
        out.flush()
        err.flush()
        sock.sendall(f"{code}\n".encode())
    return 0
