"""`harness run`: advance every approved, runnable goal until it stops."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
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
from harness.loop.clock import Clock, SystemClock
from harness.loop.rest import at_rest, unsigned
from harness.model.goalid import GOAL_ID_EXPECTED, goal_source
from harness.model.wording import show_value
from harness.record.cell import Cell, parse_cell
from harness.record.events import TERMINAL, WAITING
from harness.record.visible import block, line, one_line, tidy_numbers
from harness.store.gitrepo import Repo
from harness.store.lock import GoalLock
from harness.trust.approvals import NotApproved
from harness.trust.runnerkey import load_runner_key
from harness.trust.secret import Secret

# The loop itself (harness.loop.advance, the controller, the remote) is imported only when a
# goal has something to do: a run that finds every goal resting stays a short process.
if TYPE_CHECKING:
    import socket

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
    """With `as_json`, a run refused before any goal (bad input, no secret, not a harness
    repository) still prints its one JSON document, `{"exit_code", "error", "goals": []}`,
    besides the usual error line on stderr."""
    try:
        return _start(cwd, goal_ids, max_steps, push, env, out, err, clock, jobs, as_json)
    except HarnessError as exc:
        if as_json:
            document = {"exit_code": exc.exit_code, "error": one_line(str(exc)), "goals": []}
            out.write(json.dumps(document, indent=2) + "\n")
        raise


def _start(
    cwd: Path,
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
    if max_steps is not None and max_steps < 1:
        raise InvalidInput(f"--max-steps: {max_steps} (expected a whole number ≥ 1)")
    if jobs < 1:
        raise InvalidInput(f"--jobs: {jobs} (expected a whole number ≥ 1)")
    # HARNESS_NOW (cli.md, "The clock"): a malformed value is refused before anything runs.
    clock = clock if clock is not None else SystemClock(env)
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
    clock: Clock,
    jobs: int,
    as_json: bool,
) -> int:
    repo, secret, control = session.repo, session.secret, session.control
    remote, ids, outcomes = _begin(session, goal_ids, push, err, as_json)
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

    made: list[RunContext] = []  # what context() made, closed at the end (its live export)

    @functools.cache
    def context() -> RunContext:
        """The loop's context, made (and the loop imported) for the first goal that moves."""
        from harness.loop.context import RunContext
        from harness.loop.otel import live_trace
        from harness.store.remote import runner_id

        terminal = err if err.isatty() and not as_json else None
        made.append(
            RunContext(
                control,
                secret,
                clock,
                print_line,
                env,
                max_steps,
                remote,
                runner_id(repo),
                terminal,
                live_trace(env, err),
            )
        )
        return made[0]

    runner_key = load_runner_key(env)  # a resting head it did not sign is signed (rest.py)

    def advance(goal_id: str) -> Cell:
        cell = at_rest(repo, control, secret, remote, goal_id, clock.now())
        if cell is not None and not unsigned(repo, control, goal_id, runner_key):
            return cell
        from harness.loop.advance import advance_goal

        if control.config.notify is None:
            return advance_goal(repo, context(), goal_id)
        return _advance_and_tell(repo, context(), goal_id, advance_goal, None if as_json else err)

    with interruptible(), _closing_traces(made):
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


def _begin(
    session: Session[Secret], goal_ids: list[str], push: str | None, err: TextIO, as_json: bool
) -> tuple[Remote | None, list[str], list[dict[str, Any]]]:
    """The remote (fetched), the goals in this runner's order, and the outcomes of goal
    files that name no goal; notes on stderr."""
    repo, control = session.repo, session.control
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
    return remote, ids, [_misnamed(stem, err, quiet=as_json) for stem in misnamed]


@contextmanager
def _closing_traces(made: list[RunContext]) -> Iterator[None]:
    """The run's live export of spans, if a goal moved and one was asked for, is closed at
    its end, however it ends (loop/otel.py: the wait is bounded)."""
    try:
        yield
    finally:
        for ctx in made:
            if ctx.trace is not None:
                ctx.trace.close()


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
        out.write(json.dumps(tidy_numbers({"exit_code": code, "goals": outcomes}), indent=2) + "\n")
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
    clock: Clock,
    env: Mapping[str, str],
    err: TextIO | None,
) -> None:
    """After the run's turn at a goal (advanced, resting, busy or refused): the stale
    notification if its cell, as now recorded, is stale, and not yet told (notify.md)."""
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
    if control.owners_moved(cell) or not is_stale(cell, clock.now()):
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
