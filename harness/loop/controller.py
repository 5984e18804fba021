"""The loop: advance one goal step by step until it reaches a stop state.

Every state change is an event, recorded by the `Recorder` (append, fold into the cell,
print, and at each step boundary write the cell and the report and commit). What to do next
is decided from the cell alone (`GoalRunner.step_once`), so a process killed anywhere decides
the same thing when it is run again. How a step's end is recorded is in `finish`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import failpoints
from harness.errors import Busy, HarnessError, Interrupted, TrustFailure
from harness.loop.agents import Meter, Usage, read_report_file
from harness.loop.binding import same_tree, unbound
from harness.loop.clock import later
from harness.loop.context import RunContext
from harness.loop.crossing import Crossing
from harness.loop.finish import FINISH, MAX_LISTED_PATHS, Ran, unavailable_detail
from harness.loop.guards import ChildRecord, GitConfigGuard, RecordGuard
from harness.loop.layer import LayerFailure
from harness.loop.lesson_checks import check_lessons
from harness.loop.lessons import given_lessons
from harness.loop.progress import Progress, progress_text
from harness.loop.prompt import build_prompt
from harness.loop.recorder import call_id, fit_text
from harness.loop.sandbox import Contained, Place, Sandbox, contain, resolve
from harness.loop.shipcommit import unfaithful_refusal
from harness.loop.spend import budget_limits, recurrence, remaining_env
from harness.loop.steps import StepResult, cannot_start, child_env, run_step
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
from harness.store.gitrepo import git_text
from harness.store.remote import LEASE_GRACE_S
from harness.store.worktree import Worktree
from harness.trust.approvals import Approval

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


class GoalRunner(Crossing):
    """Drives one loaded goal in its worktree. The caller holds the goal's lock."""

    def __init__(
        self,
        ctx: RunContext,
        goal: Goal,
        approval: Approval | None,
        worktree: Worktree,
        paths: GoalPaths,
        loaded: Loaded,
        lessons: Sequence[Lesson] = (),
    ) -> None:
        super().__init__(ctx, goal, worktree, paths, loaded)
        self.approval = approval  # the run approval of these goal bytes, if there is one
        self.lessons = tuple(lessons)
        self.given: tuple[Lesson, ...] = ()
        self.steps_run = 0
        remote = ctx.remote
        if remote is not None:
            branch = worktree.branch()
            self.publish = lambda: remote.publish(branch, worktree)

    # ---- starting -----------------------------------------------------------------------

    def start_or_revise(self, owners_sha256: str) -> None:
        """Record the approved goal version: `goal.started` once, `goal.revised` after."""
        if self.cell.goal_sha256 == self.goal.sha256:
            return
        assert self.approval is not None
        kind: EventType = "goal.started" if self.cell.goal_sha256 is None else "goal.revised"
        self.emit(
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
                "sandbox": self.sandbox.containment,
                "objective": fit_text(self.goal.objective, 4000),
            }
            | recurrence(self.goal)
            | self.command_hits(),
        )
        self.checkpoint(kind.replace("goal.", "goal "))

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
        problem, self.fresh = unbound(
            self.wt, self.paths, self.key, self.cell, self.vouched, self.fresh
        )
        if problem is not None:
            self.gate("needs_attention", "tamper", problem)
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
            self.gate("parked_at_eyes", destructive_gate(pending[0]), detail)
        elif cell.step == "ship":
            self.run("ship", cell.iteration)  # a signed decision: no ceiling applies
        elif cell.used.passes >= cell.limit.passes:
            self.gate(
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
            self.gate("needs_attention", "agent_unavailable", detail)
        elif cell.step == "build" and cell.no_progress_count >= cell.no_progress_passes:
            self.gate(
                "needs_attention",
                "no_progress",
                f"failing {cell.failing_test} with an unchanged tree for {cell.no_progress_count} passes",
            )
        elif cell.step == "build" and (cell.lifetime_hits() or cell.exhausted()):
            self.out_of_budget()
        else:
            self.run(cell.step, cell.iteration)

    def done_gate(self) -> None:
        missing = [f for f in self.goal.expect_files if not (self.wt.path / f).exists()]
        short = self.expect_shortfalls()
        failed = [] if missing or short else check_lessons(self)
        if failed is None:
            return
        if failed:
            lesson, result = failed[0]
            detail = f"{result.output_tail}\n\nThe lesson:\n{lesson.text}"
            tree = self.wt.work_tree_id()
            self.emit(
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
            self.checkpoint("done gate blocked by a lesson check", tree)
        elif missing or short:
            tree = self.wt.work_tree_id()
            lines = ["expected files are missing: " + ", ".join(missing)] if missing else []
            data: dict[str, Any] = {"missing": missing, "tree": tree}
            if short:
                data["expect_short"] = short[:MAX_SHORT_LINES]  # a glob: at most 1,000 chars
            data["detail"] = fit_text("\n".join(lines + short), 8000)
            self.emit("done.blocked", None, self.cell.iteration, data)
            self.checkpoint("done gate blocked", tree)
        elif "ship" in self.cell.steps:
            self.gate(
                "parked_at_eyes",
                "ship",
                f"commit {self.wt.head()} passed the done gate; ship needs a signed decision",
            )
        else:
            self.emit("goal.completed", None, self.cell.iteration, {"commit": self.wt.head()})
            self.checkpoint("completed")

    def expect_shortfalls(self) -> list[str]:
        """`expect.globs` counted over the commit the gate judges (loop/expect.py)."""
        from harness.loop.expect import shortfalls
        from harness.record.changes import goal_base

        base = lambda: goal_base(self.ledger.records())  # noqa: E731 (read only when needed)
        return shortfalls(self.goal.expect_globs, self.wt.path, "HEAD", base)

    def resume_cut_off(self) -> None:
        flight = self.cell.in_flight
        assert flight is not None
        step = flight.step
        if flight.held_elsewhere(self.ctx.runner, self.ctx.clock.now):
            raise Busy(f"goal {self.goal.id}: {flight.holder_text()}")
        if step == "ship":
            self.gate(
                "parked_at_eyes",
                "ship_outcome_unknown",
                "the ship step was cut off; its outcome is unknown and it is never retried on its own",
            )
            return
        changed = [
            p for p in self.changed_since(flight.base) if not p.startswith(self.paths.rel + "/")
        ]
        self.emit(
            "step.cutoff",
            step,
            flight.iteration,
            {"call_id": flight.call_id, "changed": changed[:MAX_LISTED_PATHS]},
        )
        if self.tampered(flight.base, changed, exclude_own=True):
            return
        if self.cell.used.passes >= self.cell.limit.passes:
            # A step that dies every time must still reach the ceiling, never loop.
            self.gate("needs_attention", "max_passes", self.spend_text(["passes"]))
            return
        self.run(step, flight.iteration)

    def changed_since(self, base: str) -> list[str]:
        return self.wt.changed_paths(base) if self.wt.is_ancestor(base) else []

    # ---- running one step ---------------------------------------------------------------

    def run(self, step: StepName, iteration: int) -> None:
        self.steps_run += 1
        cid = call_id(self.goal.id, iteration, step)
        lease = self.spec(step).timeout_s + LEASE_GRACE_S
        data: dict[str, Any] = {
            "call_id": cid,
            "base": self.wt.head(),
            "runner": self.ctx.runner,
            "lease_until": later(self.ctx.clock.now(), lease),
            "sandbox": self.sandbox.containment,
        }
        if not self.spec(step).network:
            data["network"] = "off"  # (sandbox.md, "Network")
        failing = self.cell.failing_test
        build = step == "build"
        self.given = given_lessons(self.lessons, self.goal.objective, failing) if build else ()
        if self.given:
            data["lessons"] = [lesson.as_ref() for lesson in self.given]
        self.note_ignored(step)  # a walk of the tree, beside the checkpoint's git work
        self.emit("step.started", step, iteration, data)
        started = self.checkpoint(f"{step} {iteration} started")
        if self.ignored_before is not None:  # done before the build writes a byte
            self.ignored_before.entries()
        # The tree that commit holds, staged by its checkpoint a moment ago.
        before = self.cell.tree if step in READ_ONLY_STEPS else None
        failpoints.hit(f"in_{step}")
        guard = GitConfigGuard(self.wt.guarded_files())
        record = RecordGuard(self.wt)
        try:
            result, report, agent = self.execute(step, iteration, cid)
        except Interrupted as stop:
            # The step's group is already ended (steps.run_step); the step stays in flight,
            # so the next run handles it as cut off (a ship step: outcome unknown).
            self.emit("step.interrupted", step, iteration, {"call_id": cid, "signal": stop.name})
            self.checkpoint(f"{step} {iteration} interrupted by {stop.name}")
            raise
        if self.ctx.remote is not None:  # the fence (remote.md): was the step taken over?
            what = f"goal {self.goal.id}: {step}[{iteration}]"
            branch = self.ctx.control.branch(self.goal.id)
            self.ctx.remote.fence(branch, self.wt, started, what, data["lease_until"])
        self.check_worktree_kept(step, iteration)
        ran = Ran(step, iteration, cid, started, before, result, report, agent)
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
        FINISH[step](self, ran)

    def stop_tampered(self, ran: Ran, touched: list[str], what: str) -> None:
        # `tree`: the fold of a judge or review that did not pass reads it (a repair round).
        tamper = ran.data() | {
            "result": "tamper",
            "touched": touched,
            "tree": self.wt.work_tree_id(),
        }
        self.emit("step.finished", ran.step, ran.iteration, tamper)
        self.gate("needs_attention", "tamper", what + ", ".join(touched))

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

    def execute(
        self, step: StepName, iteration: int, cid: str
    ) -> tuple[StepResult, Usage | None, Usage | None]:
        """Run the step's command: its result, its HARNESS_REPORT_FILE, a build's spend."""
        spec = self.spec(step)
        scratch = Path(tempfile.mkdtemp(prefix=f"harness-{self.goal.id}-"))
        prompt = build_prompt(self.goal, self.cell, self.given)
        (scratch / "prompt.txt").write_text(prompt)
        env = child_env(
            self.ctx.base_env,
            self.ctx.control.config.scrub_env,
            {
                "HARNESS_GOAL": self.goal.id,
                "HARNESS_ITERATION": str(iteration),
                "HARNESS_STEP": step,
                "HARNESS_PROMPT_FILE": str(scratch / "prompt.txt"),
                "HARNESS_REPORT_FILE": str(scratch / "report.json"),
                "HARNESS_CALL_ID": cid,
            }
            | remaining_env(self.cell),
        )
        children = ChildRecord(self.ctx.control.repo.harness_dir() / "locks", self.goal.id)
        progress = Progress(
            self.ctx.progress, progress_text(self.goal.id, step, iteration, self.cell)
        )

        def started(pid: int) -> None:
            children.save(pid, cid)
            progress.start()  # only after the fork: no thread exists while the child is made

        cwd = self.wt.path
        try:
            refused = None
            if step == "ship":  # exactly the signed commit, never the worktree an agent touched
                cwd = self.ship_checkout(scratch / "checkout")
                env |= self.ship_env(git_text(["rev-parse", "HEAD"], cwd))
                refused = unfaithful_refusal(cwd, self.ledger.records())
            meter = None
            try:
                if refused is not None:
                    raise LayerFailure(refused)
                with self.contained(step, spec.run, env, scratch, cwd, spec.network) as box:
                    meter = self.meter(box.records_env) if step == "build" else None
                    result = run_step(
                        box.argv,
                        cwd,
                        box.env,
                        prompt.encode(),
                        spec.timeout_s,
                        on_start=started,
                        on_stdout=meter.feed if meter else None,
                    )
            except LayerFailure as exc:  # a read-only step without its copy cannot start
                result = cannot_start(str(exc))
            spent = meter.finish() if meter else None
            return result, read_report_file(scratch / "report.json"), spent
        finally:
            progress.stop()
            children.clear()
            if cwd != self.wt.path:
                self.wt.remove_checkout(cwd)
            shutil.rmtree(scratch, ignore_errors=True)

    # ---- containment (sandbox.md) ---------------------------------------------------------

    @functools.cached_property
    def sandbox(self) -> Sandbox:
        return resolve(self.ctx.control.config.sandbox, self.ctx.base_env)

    def contained(
        self,
        step: str,
        argv: Sequence[str],
        env: dict[str, str],
        scratch: Path | None = None,
        work: Path | None = None,
        network: bool = True,
    ) -> contextlib.AbstractContextManager[Contained]:
        """Only a build writes the worktree; every other step works on a throw-away copy,
        from which the judge's JUnit file is copied back. `work` is the folder the step runs
        in when it is not the goal's worktree (the ship step's checkout of the signed commit)."""
        self.fresh = None  # a step command runs: what was staged is no longer known
        config = self.ctx.control.config
        place = Place.of(
            self.ctx.control.repo, self.goal.id, self.ctx.base_env, config.sandbox_binds
        )
        if work is not None and work != place.worktree:
            place = dataclasses.replace(place, worktree=work)
        junit = self.goal.judge.junit
        keep = (junit,) if step == "judge" and junit else ()
        return contain(
            self.sandbox,
            place,
            argv,
            env,
            writable=step == "build",
            scratch=scratch,
            keep=keep,
            network=network,
        )

    def ship_checkout(self, path: Path) -> Path:
        """A fresh checkout of the commit the ship decision named (in this process) or of
        the head, whose tree `bound()` has just compared with the cell's."""
        commit = self.ship_from or self.wt.head()
        if not same_tree(self.wt, commit, self.cell):
            raise TrustFailure(f"goal {self.goal.id}: commit {commit} is not what the cell names")
        self.wt.add_checkout(commit, path)
        return path

    def meter(self, env: dict[str, str]) -> Meter:
        """Reads the build's stdout as it arrives; `since` dates the tool's own records."""
        prices = self.ctx.control.config.prices
        return Meter(self.goal.build.format, env, self.wt.path, time.time(), prices)
