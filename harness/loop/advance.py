"""Moving one goal on: verify everything, cross a gate a decision names, run steps.

`harness run` reaches here only for a goal that has something to do (`loop/rest.py`
answers for resting goals without importing this); `harness ship` and `unpark` come here
with their decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from harness.errors import Busy, TrustFailure
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import offline_refusal, resolve
from harness.loop.context import RunContext
from harness.loop.control import Control
from harness.loop.controller import GoalRunner
from harness.loop.crossing import rotate_owners
from harness.loop.finish import settle_owed
from harness.loop.guards import ChildRecord
from harness.loop.recurring import finish_run_start, start_next_run
from harness.loop.rest import rests, unsigned
from harness.model.goal import Goal
from harness.model.lessons import Lesson
from harness.record.cell import Cell
from harness.record.events import TERMINAL, WAITING, GateReason
from harness.record.hydrate import Committed, GoalPaths, Loaded, committed_view, load
from harness.record.ledger import Event, Record
from harness.record.locate import refuse_lost
from harness.store.gitrepo import Repo
from harness.store.recorded import remember
from harness.store.worktree import Worktree, ensure_worktree, open_worktree
from harness.trust.approvals import Approval, SignedRecord, verify_record
from harness.trust.decisions import find_decision

if TYPE_CHECKING:
    from harness.loop.otel import GoalTrace


def _containable_goal(repo: Repo, ctx: RunContext, goal_id: str) -> Goal:
    """The goal, once its steps can be contained as the config and the goal file say:
    `sandbox: required` and no working bwrap (exit 3), a bind that would show what a step
    must not see (exit 2), a hidden folder holding the repository (exit 3: the runner's
    setup, not the owners' files, is wrong), a `network: false` step with no sandbox to cut
    it off (exit 3) are refused before anything is written."""
    control = ctx.control
    ctx.runner_key  # noqa: B018 (a machine the owners do not list as a runner writes nothing)
    sandbox = resolve(control.config.sandbox, ctx.base_env)
    place = Place.of(repo, goal_id, ctx.base_env, control.config.sandbox_binds)
    place.bound()
    hiding = place.hiding_the_repository() if sandbox.on else None
    if hiding is not None:
        raise hiding
    goal = control.goal(goal_id, control.principals())
    refusal = offline_refusal(sandbox, goal.offline_steps(), goal.source)
    if refusal is not None:
        raise refusal
    return goal


def advance_goal(
    repo: Repo, ctx: RunContext, goal_id: str, extra: Sequence[SignedRecord] = ()
) -> Cell:
    """Verify, then move one goal on. The caller holds its lock (`harness run` calls this
    only after `loop.rest.at_rest` found the goal has something to do).

    `extra` holds decision records not yet on the control ref (a `harness ship` acting at
    once); they are checked exactly like the committed ones.
    """
    control = ctx.control
    goal = _containable_goal(repo, ctx, goal_id)
    lessons = control.lessons()
    approval = _approval(control, goal)
    # A run that died here may have left its step's processes and git's index.lock behind.
    ChildRecord(repo.harness_dir() / "locks", goal_id).end_leftover()
    repo.repair_worktree(repo.worktree_path(goal_id))
    dropped = repo.drop_empty_objects()  # a power cut's leftovers, before git builds on them
    if ctx.remote is not None:
        ctx.remote.sync(control.branch(goal_id), repo.worktree_path(goal_id))
    branch = control.branch(goal_id)
    wt = open_worktree(repo, goal_id, branch)  # a kept worktree whose branch is gone: refused
    if wt is None:
        # A record this clone kept whose branch is gone is refused, never started afresh
        # (a new branch would be a new budget; cli.md, "A lost record").
        refuse_lost(repo, goal_id, branch)
        if approval is None and repo.rev_parse(f"refs/heads/{branch}") is None:
            control.run_approval(goal)  # raises the precise refusal; nothing is created
        # A goal with a record gets its worktree back first: whether an unapproved edit
        # matters (a finished goal rests whatever its file says) is _move_on's question.
        wt = ensure_worktree(repo, goal_id, branch, control.commit)
    remember(repo, goal_id, branch)
    _repair_index(wt, dropped)
    runner, bound = _loaded_runner(ctx, goal, approval, wt, lessons)
    try:
        return _move_on(ctx, runner, bound, approval, extra)
    except Busy:
        # Another runner holds or won the goal: what this run recorded is not pushed and
        # is not pushed, so it is not printed either (docs/specs/remote.md).
        runner.recorder.drop_unpublished_lines()
        raise
    finally:
        runner.recorder.flush_lines()


def _move_on(
    ctx: RunContext,
    runner: GoalRunner,
    bound: bool,
    approval: Approval | None,
    extra: Sequence[SignedRecord],
) -> Cell:
    control, goal = ctx.control, runner.goal
    goal_id = goal.id
    cell = runner.cell
    if not bound:  # before anything is used or run
        return runner.cell
    records = (*control.approvals(goal_id), *extra)
    # A finished goal is left alone, unless it recurs and its next run is due (recurring.py);
    # so is one waiting as recorded with no decision naming its state: the question `harness
    # run`'s shortcut asked before loading anything, asked again of what is now verified.
    if rests(goal_id, cell, ctx.clock.now, goal.sha256, control.owners_sha256, records):
        if unsigned(control.repo, control, goal_id, ctx.runner_key):
            runner.recorder.checkpoint("signed by this runner")  # trust.md, "Runner keys"
        return runner.cell
    between_runs = cell.status in TERMINAL
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
    if approval is None:
        # Between runs an edited goal file waits for approval like a new goal (no gate).
        if started and cell.goal_sha256 != goal.sha256 and not between_runs:
            _gate_unless_waiting(
                runner,
                "goal_changed",
                f"goals/{goal_id}.yaml changed after the run began "
                f"(sha256 {goal.sha256[:12]}); approve the new version",
            )
            return runner.cell
        control.run_approval(goal)  # raises the precise refusal
    control.vouch_goal(goal_id)  # approved, bound, not refused: its parse is remembered
    runner.start_or_revise(control.owners_sha256)
    waiting = runner.retry_pending()  # the model API was unavailable; no try is due yet
    if cell.status == "running" and runner.cell.status == "running" and not waiting:
        # It was left running by a process that is gone (a crash, a signal, --max-steps).
        runner.recorder.emit("goal.resumed", None, cell.iteration, {"runner": ctx.runner})
    if runner.cell.status in WAITING:
        source = f"goals/{goal_id}.approval"
        decision = find_decision(records, control.owners(), goal_id, runner.cell, source)
        if decision is None:
            return runner.cell
        runner.cross_gate(decision.approval)
    # A revision between runs leaves the goal as its last run ended.
    start_next_run(runner.recorder, control.commit)
    return runner.advance()


def _repair_index(wt: Worktree, dropped: list[str]) -> None:
    """What a kill or a power cut left in the goal's index: git's index.lock, entries or
    cached trees naming objects that were dropped as empty, and an index git cannot read
    (cut, or its shared part lost): the last two are made again from HEAD."""
    wt.clear_stale_index_lock()
    if dropped or not wt.index_readable():
        wt.rebuild_index()


def _loaded_runner(
    ctx: RunContext,
    goal: Goal,
    approval: Approval | None,
    wt: Worktree,
    lessons: Sequence[Lesson],
) -> tuple[GoalRunner, bool]:
    """Load and verify the goal, and finish what a process killed after its last events
    left undone (loop.md, "Roll-forward"): no later step would write and commit it.

    The second value says the branch and worktree are the harness's own (`bound`); a goal
    that is not stops at tamper before anything is settled on top of a foreign change."""
    paths = GoalPaths(wt.path, goal.id)
    try:
        committed = committed_view(paths)
    except TrustFailure:
        # An object of the head a prune beside the last run removed, while the worktree
        # still holds it, is written again; anything else is refused as before.
        wt.write_lost_objects()
        committed = committed_view(paths)
    last: list[Event] = []
    # With live export (loop/otel.py), the goal's tracer reads the ledger as it is loaded.
    trace = ctx.trace.goal(goal.id) if ctx.trace is not None else None
    loaded = load(
        paths,
        ctx.secret.goal_key(goal.id),
        committed,
        repair=True,
        on_record=_reading(last, trace),
    )
    runner = GoalRunner(ctx, goal, approval, wt, paths, loaded, lessons, trace)
    # A kill while run N started: finished before the worktree is compared with the cell.
    started = finish_run_start(
        runner.recorder, last[0] if last else None, _unsettled(paths, loaded, committed)
    )
    if not started or (runner.cell.status not in TERMINAL and not runner.bound()):
        return runner, False
    owed = settle_owed(runner.recorder, last[0] if last else None, goal.halt)
    status = runner.cell.status
    if not owed and status in TERMINAL | WAITING and _unsettled(paths, loaded, committed):
        runner.recorder.checkpoint(f"rolled forward to {status}")
    return runner, True


def _reading(last: list[Event], trace: GoalTrace | None) -> Callable[[Record], None]:
    """What sees each record as the goal loads: `last` keeps the last event; with live
    export, the goal's tracer reads it too (sending nothing: it was recorded before)."""

    def keep(record: Record) -> None:
        last[:] = [record.event]
        if trace is not None:
            trace.seed(record)

    return keep


def _unsettled(paths: GoalPaths, loaded: Loaded, committed: Committed | None) -> bool:
    """Whether the cell the ledger folds to is not yet written, or written and not committed."""
    if committed is None:  # no readable commit: nothing can be committed on top of it
        return False
    if loaded.rolled_forward:
        return True
    try:
        return paths.cell.read_bytes() != committed.cell
    except FileNotFoundError:
        return True


def _gate_unless_waiting(runner: GoalRunner, reason: GateReason, detail: str) -> None:
    if runner.cell.status not in WAITING:
        runner.recorder.gate("needs_attention", reason, detail)


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
        rotate_owners(runner.recorder, verdict.approval, control.owners_sha256, control.commit)
        return True
    return False


def _approval(control: Control, goal: Goal) -> Approval | None:
    """The valid run approval for these exact goal bytes, or None."""
    try:
        return control.run_approval(goal).approval
    except TrustFailure:
        return None
