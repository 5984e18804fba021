"""The loop: advance one goal step by step until it reaches a stop state.

Every state change is an event, recorded by the runner's `Recorder` (append, fold into the
cell, print, and at each step boundary write the cell and the report and commit). What to do
next is decided from the cell alone (`GoalRunner.step_once`), so a process killed anywhere
decides the same thing when it is run again. What each step's result does is the table
`finishers` (`finish`, `buildfinish`); a signed decision's use is `crossing`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness import failpoints
from harness.errors import Busy, HarnessError, Interrupted, TrustFailure
from harness.loop import crossing
from harness.loop.binding import unbound
from harness.loop.buildfinish import BuildFinish, ignored_walk
from harness.loop.clock import later
from harness.loop.context import RunContext
from harness.loop.egress import park_on_denied
from harness.loop.execute import StepCommands
from harness.loop.finish import (
    MAX_LISTED_PATHS,
    Ran,
    finish_judge,
    finish_plan,
    finish_review,
    finish_ship,
    tampered,
    unavailable_detail,
)
from harness.loop.guards import GitConfigGuard, RecordGuard
from harness.loop.lesson_checks import check_lessons
from harness.loop.lessons import given_lessons
from harness.loop.recorder import Recorder, call_id, fit_text
from harness.loop.shipremote import sandbox_hint
from harness.loop.spend import budget_limits, recurrence
from harness.model.goal import BuildSpec, Goal, JudgeSpec, StepSpec
from harness.model.lessons import Lesson
from harness.record.cell import Cell, pending_classes
from harness.record.events import (
    READ_ONLY_STEPS,
    STEP_NAMES,
    TERMINAL,
    WAITING,
    EventType,
    StepName,
    destructive_gate,
)
from harness.record.hydrate import GoalPaths, Loaded
from harness.store.remote import LEASE_GRACE_S, Remote
from harness.store.worktree import Worktree
from harness.trust.approvals import Approval

if TYPE_CHECKING:
    from harness.loop.otel import GoalTrace

MAX_SHORT_LINES = 20  # expect.globs shortfalls recorded in one done.blocked

# Each step's command in the goal file; plan, review and ship are optional.
STEP_SPECS: dict[StepName, Callable[[Goal], StepSpec | BuildSpec | JudgeSpec | None]] = {
    "plan": lambda goal: goal.plan,
    "build": lambda goal: goal.build,
    "judge": lambda goal: goal.judge,
    "review": lambda goal: goal.review,
    "ship": lambda goal: goal.ship,
}


def goal_steps(goal: Goal) -> list[StepName]:
    return [step for step in STEP_NAMES if STEP_SPECS[step](goal) is not None]


def finishers(
    rec: Recorder, goal: Goal, ctx: RunContext, commands: StepCommands
) -> dict[StepName, Callable[[Ran], None]]:
    """What each step's result does, recorded through `rec`."""
    junit = goal.judge.junit
    return {
        "plan": lambda ran: finish_plan(rec, ran),
        "build": BuildFinish(rec, goal, ctx, commands),
        "judge": lambda ran: finish_judge(rec, ran, junit),
        "review": lambda ran: finish_review(rec, ran),
        "ship": lambda ran: finish_ship(rec, ran, ship_hint(goal, commands), commands.attestation),
    }


def ship_hint(goal: Goal, commands: StepCommands) -> Callable[[], str]:
    """What a failed ship's detail adds when the sandbox hid a path remote (shipremote)."""
    network = goal.ship.network if goal.ship is not None else True
    root = commands.ctx.control.repo.root
    return sandbox_hint(root, commands.sandbox, commands.place(), network)


def _publisher(remote: Remote | None, wt: Worktree) -> Callable[[], None] | None:
    """With a remote, what pushes the goal branch at each checkpoint (remote.md)."""
    if remote is None:
        return None
    branch = wt.branch()
    return lambda: remote.publish(branch, wt)


class GoalRunner:
    """Drives one loaded goal in its worktree. The caller holds the goal's lock.

    It records through its `recorder`, which holds the goal's cell; it keeps only what one
    process learns along the way: the steps it ran and the commit a ship decision named."""

    def __init__(
        self,
        ctx: RunContext,
        goal: Goal,
        approval: Approval | None,
        worktree: Worktree,
        paths: GoalPaths,
        loaded: Loaded,
        lessons: Sequence[Lesson] = (),
        trace: GoalTrace | None = None,
    ) -> None:
        self.ctx, self.goal, self.wt, self.paths = ctx, goal, worktree, paths
        self.approval = approval  # the run approval of these goal bytes, if there is one
        self.recorder = Recorder(
            goal.id,
            ctx.secret.goal_key(goal.id),
            worktree,
            paths,
            loaded,
            ctx.clock,
            ctx.print_line,
            redactor=ctx.redactor,
            publish=_publisher(ctx.remote, worktree),
            signer=ctx.runner_key,
            trace=trace,
        )
        self.lessons = tuple(lessons)
        self.steps_run = 0
        self.ship_from: str | None = None  # the gate commit a ship decision named, here
        self.commands = StepCommands(ctx, goal, self.recorder)
        self.finishers = finishers(self.recorder, goal, ctx, self.commands)

    @property
    def cell(self) -> Cell:
        return self.recorder.cell

    # ---- starting -----------------------------------------------------------------------

    def start_or_revise(self, owners_sha256: str) -> None:
        """Record the approved goal version: `goal.started` once, `goal.revised` after."""
        if self.cell.goal_sha256 == self.goal.sha256:
            return
        assert self.approval is not None
        kind: EventType = "goal.started" if self.cell.goal_sha256 is None else "goal.revised"
        self.recorder.emit(
            kind,
            None,
            self.cell.iteration,
            {
                "goal_sha256": self.goal.sha256,
                "owners_sha256": owners_sha256,
                "approved_by": list(self.approval.signers),
                "steps": goal_steps(self.goal),
                "limits": budget_limits(self.goal),
                "no_progress_passes": self.goal.halt.no_progress_passes,
                "stale_after_s": self.goal.halt.stale_after_s,
                "control_commit": self.ctx.control.commit,
                "sandbox": self.commands.sandbox.containment,
                "objective": fit_text(self.goal.objective, 4000),
            }
            | recurrence(self.goal)
            | self.command_hits()
            | ({"fresh_try": True} if kind == "goal.revised" else {}),
        )
        self.recorder.checkpoint(kind.replace("goal.", "goal "))

    def command_hits(self) -> dict[str, Any]:
        """A declared step command that itself deploys, drops or pushes parks the goal first.
        The ship command is left out: it already needs a signed decision."""
        from harness.trust.destructive.classify import classify_command
        from harness.trust.destructive.hits import classes_of, owner_rules, split_enforced
        from harness.trust.destructive.summary import summarize

        extra = self.ctx.control.config.destructive
        specs = (self.goal.plan, self.goal.build, self.goal.judge, self.goal.review)
        found = [h for spec in specs if spec for h in classify_command(spec.run, extra)]
        hits, warned = split_enforced(found, extra)
        noted: dict[str, Any] = {"command_warned": [h.describe() for h in warned[:50]]}
        noted = (noted if warned else {}) | owner_rules(hits, warned)
        if not hits:
            return noted
        return noted | {
            "command_classes": list(classes_of(hits)),
            "command_detail": summarize(hits),
        }

    def cross_gate(self, approval: Approval) -> None:
        """Record a signed decision's use (`crossing.py`); a ship decision's commit is the
        only one this process's ship step may check out."""
        self.ship_from = approval.commit if approval.decision == "ship" else None
        crossing.cross_gate(self.recorder, approval, self.ctx.control.repo)

    # ---- the loop -----------------------------------------------------------------------

    def advance(self) -> Cell:
        while self.cell.status not in TERMINAL | WAITING:
            if self.ctx.max_steps is not None and self.steps_run >= self.ctx.max_steps:
                break
            if self.retry_pending():
                break
            self.step_once()
        return self.cell

    def retry_pending(self) -> bool:
        """The last build found the model API unavailable and its next try is not due yet:
        the goal is left alone (nothing is appended) until a run after `retry_at`."""
        cell, unavailable = self.cell, self.cell.unavailable
        if unavailable is None or cell.in_flight is not None or pending_classes(cell):
            return False
        return cell.step == "build" and unavailable.waiting(self.ctx.clock.now())

    def bound(self) -> bool:
        """The branch head and worktree are what the harness committed; else stop at tamper."""
        rec = self.recorder
        problem, rec.fresh = unbound(self.wt, self.paths, rec.key, rec.cell, rec.vouched, rec.fresh)
        if problem is not None:
            rec.gate("needs_attention", "tamper", problem)
        return problem is None

    def step_once(self) -> None:
        if not self.bound():
            return
        cell = self.cell
        if cell.in_flight is not None:
            self.resume_cut_off()
            return
        pending = pending_classes(cell)
        if pending:
            detail = cell.destructive_detail or ", ".join(pending)
            self.recorder.gate("parked_at_eyes", destructive_gate(pending[0]), detail)
        elif cell.step == "ship":
            self.run("ship", cell.iteration)  # a signed decision: no ceiling applies
        elif cell.used.passes >= cell.limit.passes:
            self.recorder.gate(
                "needs_attention",
                "max_passes",
                f"{cell.used.passes} of {cell.limit.passes} passes used",
            )
        elif cell.step is None:
            self.done_gate()
        elif cell.step == "build" and cell.unavailable and cell.unavailable.given_up():
            # The last try is recorded; the process ended before its gate was.
            unavailable = cell.unavailable
            detail = unavailable_detail(unavailable.count, unavailable.message)
            self.recorder.gate("needs_attention", "agent_unavailable", detail)
        elif cell.step == "build" and cell.no_progress_count >= cell.no_progress_passes:
            self.recorder.gate(
                "needs_attention",
                "no_progress",
                f"failing {cell.failing_test} with an unchanged tree for {cell.no_progress_count} passes",
            )
        elif cell.step == "build" and (cell.lifetime_hits() or cell.exhausted()):
            crossing.out_of_budget(self.recorder)
        else:
            self.run(cell.step, cell.iteration)

    def done_gate(self) -> None:
        missing = [f for f in self.goal.expect_files if not (self.wt.path / f).exists()]
        short = self.expect_shortfalls()
        failed = [] if missing or short else check_lessons(self.commands, self.lessons)
        if failed is None:
            return
        if failed:
            lesson, result = failed[0]
            detail = f"{result.output_tail}\n\nThe lesson:\n{lesson.text}"
            tree = self.wt.work_tree_id()
            self.recorder.emit(
                "done.blocked",
                None,
                self.cell.iteration,
                {
                    "missing": [],
                    "lessons_failed": [x.name for x, _ in failed],
                    "tree": tree,
                    "detail": fit_text(detail, 8000),
                },
            )
            self.recorder.checkpoint("done gate blocked by a lesson check", tree)
        elif missing or short:
            tree = self.wt.work_tree_id()
            lines = ["expected files are missing: " + ", ".join(missing)] if missing else []
            data: dict[str, Any] = {"missing": missing, "tree": tree}
            if short:
                data["expect_short"] = short[:MAX_SHORT_LINES]  # a glob: at most 1,000 chars
            data["detail"] = fit_text("\n".join(lines + short), 8000)
            self.recorder.emit("done.blocked", None, self.cell.iteration, data)
            self.recorder.checkpoint("done gate blocked", tree)
        elif "ship" in self.cell.steps:
            self.recorder.gate(
                "parked_at_eyes",
                "ship",
                f"commit {self.wt.head()} passed the done gate; ship needs a signed decision",
                self._whole_change(),
            )
        else:
            self.recorder.emit(
                "goal.completed", None, self.cell.iteration, {"commit": self.wt.head()}
            )
            self.recorder.checkpoint("completed")

    def _whole_change(self) -> dict[str, str]:
        """The ship gate's `change`: what a signature ships, `harness diff`'s base..gate
        without ledger/, bounded as a build's diff is, for the reports' decision block."""
        from harness.loop.reviewdiff import whole_change
        from harness.record.changes import goal_base

        base = goal_base(self.recorder.ledger.records())
        return whole_change(self.wt.path, base, self.goal.id) if base else {}

    def expect_shortfalls(self) -> list[str]:
        """`expect.globs` counted over the commit the gate judges (loop/expect.py)."""
        from harness.loop.expect import shortfalls
        from harness.record.changes import goal_base

        ledger = self.recorder.ledger
        base = lambda: goal_base(ledger.records())  # noqa: E731 (read only when needed)
        return shortfalls(self.goal.expect_globs, self.wt.path, "HEAD", base)

    def resume_cut_off(self) -> None:
        flight = self.cell.in_flight
        assert flight is not None
        step = flight.step
        if flight.held_elsewhere(self.ctx.runner, self.ctx.clock.now):
            raise Busy(f"goal {self.goal.id}: {flight.holder_text()}")
        if step == "ship":
            self.recorder.gate(
                "parked_at_eyes",
                "ship_outcome_unknown",
                "the ship step was cut off; its outcome is unknown and it is never retried on its own",
            )
            return
        changed = [
            p for p in self.changed_since(flight.base) if not p.startswith(self.paths.rel + "/")
        ]
        self.recorder.emit(
            "step.cutoff",
            step,
            flight.iteration,
            {"call_id": flight.call_id, "changed": changed[:MAX_LISTED_PATHS]},
        )
        if tampered(self.recorder, flight.base, changed, exclude_own=True):
            return
        if self.cell.used.passes >= self.cell.limit.passes:
            # A step that dies every time must still reach the ceiling, never loop.
            self.recorder.gate(
                "needs_attention", "max_passes", crossing.spend_text(self.cell, ["passes"])
            )
            return
        self.run(step, flight.iteration)

    def changed_since(self, base: str) -> list[str]:
        return self.wt.changed_paths(base) if self.wt.is_ancestor(base) else []

    # ---- running one step ---------------------------------------------------------------

    def run(self, step: StepName, iteration: int) -> None:
        rec = self.recorder
        self.steps_run += 1
        cid = call_id(self.goal.id, iteration, step)
        spec = self.spec(step)
        lease = spec.timeout_s + LEASE_GRACE_S
        data: dict[str, Any] = {
            "call_id": cid,
            "base": self.wt.head(),
            "runner": self.ctx.runner,
            "lease_until": later(self.ctx.clock.now(), lease),
            "sandbox": self.commands.sandbox.containment,
        }
        if not spec.network:  # (sandbox.md, "Network", "Egress by name")
            data["network"] = "off" if spec.allow is None else "allowlist"
        failing = self.cell.failing_test
        build = step == "build"
        given = given_lessons(self.lessons, self.goal.objective, failing) if build else ()
        if given:
            data["lessons"] = [lesson.as_ref() for lesson in given]
        # Before a build: a walk of the tree, beside the checkpoint's git work.
        ignored = ignored_walk(step, self.wt)
        rec.emit("step.started", step, iteration, data)
        started = rec.checkpoint(f"{step} {iteration} started")
        if ignored is not None:  # done before the build writes a byte
            ignored.entries()
        # The tree that commit holds, staged by its checkpoint a moment ago.
        before = self.cell.tree if step in READ_ONLY_STEPS else None
        failpoints.hit(f"in_{step}")
        guard = GitConfigGuard(self.wt.guarded_files())
        record = RecordGuard(self.wt)
        try:
            result, report, agent, egress = self.commands.execute(
                step, spec, iteration, cid, given, self.ship_from
            )
        except Interrupted as stop:
            # The step's group is already ended (steps.run_step); the step stays in flight,
            # so the next run handles it as cut off (a ship step: outcome unknown).
            rec.emit("step.interrupted", step, iteration, {"call_id": cid, "signal": stop.name})
            rec.checkpoint(f"{step} {iteration} interrupted by {stop.name}")
            raise
        if self.ctx.remote is not None:  # the fence (remote.md): was the step taken over?
            what = f"goal {self.goal.id}: {step}[{iteration}]"
            branch = self.ctx.control.branch(self.goal.id)
            self.ctx.remote.fence(branch, self.wt, started, what, data["lease_until"])
        self.check_worktree_kept(step, iteration)
        ran = Ran(step, iteration, cid, started, before, result, report, agent, ignored, egress)
        touched = guard.changed()
        if touched:
            # Before any git call: a changed config could make git run the agent's commands.
            guard.restore()
            self.stop_tampered(ran, touched, "changed git configuration: ")
            return
        moved = record.changed()
        if moved:  # before one more byte is written there: a link would carry it anywhere
            record.restore()
            self.stop_tampered(ran, moved, "a step changed the harness's own record: ")
            return
        self.finishers[step](ran)
        park_on_denied(self.recorder, self.goal.halt, step, iteration, egress)

    def stop_tampered(self, ran: Ran, touched: list[str], what: str) -> None:
        # `tree`: the fold of a judge or review that did not pass reads it (a repair round).
        tamper = ran.data() | {
            "result": "tamper",
            "touched": touched,
            "tree": self.wt.work_tree_id(),
        }
        self.recorder.emit("step.finished", ran.step, ran.iteration, tamper)
        self.recorder.gate("needs_attention", "tamper", what + ", ".join(touched))

    def check_worktree_kept(self, step: StepName, iteration: int) -> None:
        """A worktree removed while the step ran (by the agent or anyone): nothing of the step
        is recorded (an append would recreate a ledger folder holding only the newest events,
        and a commit there would record every file as deleted). The step stays in flight, so
        the next run recreates the worktree from the goal branch and runs it again."""
        if (self.wt.path / ".git").is_file() and self.paths.events.is_dir():
            return
        raise TrustFailure(
            f"{self.wt.path}: the goal's worktree was removed while {step}[{iteration}] ran; "
            "nothing of that step was recorded; the next run recreates the worktree from the "
            "goal branch and runs the step again"
        )

    def spec(self, step: StepName) -> StepSpec | BuildSpec | JudgeSpec:
        spec = STEP_SPECS[step](self.goal)
        if spec is None:
            raise HarnessError(f"goal {self.goal.id}: the goal file has no {step} step")
        return spec
