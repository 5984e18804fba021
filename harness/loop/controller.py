"""The loop: advance one goal step by step until it reaches a stop state.

Every state change is an event. The controller appends it, folds it into the cell, prints
its text line, and at each step boundary writes the cell and the report and commits. What
to do next is decided from the cell alone (`next_action`), so a process killed anywhere
decides the same thing when it is run again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TextIO

from harness import failpoints
from harness.errors import Busy, Interrupted
from harness.loop.agents import Usage, combine, parse_output, read_report_file
from harness.loop.control import Control
from harness.loop.judge import first_failing_test
from harness.loop.lessons import Lesson, prompt_section, select
from harness.loop.steps import StepResult, child_env, end_marked_group, run_step
from harness.model.goal import Goal
from harness.record.cell import Cell, pending_classes, write_cell
from harness.record.events import READ_ONLY_STEPS, TERMINAL, WAITING
from harness.record.fold import apply
from harness.record.hydrate import GoalPaths, Loaded
from harness.record.ledger import Position
from harness.record.render import text_line
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Worktree
from harness.store.remote import LEASE_GRACE_S, Remote
from harness.trust.approval import Verdict
from harness.trust.decisions import extended_limits
from harness.trust.secret import Secret

PROTECTED_PREFIXES = ("goals/", ".harness/", "ledger/", "lessons/")
TEXT_FIELD_BYTES = 12_000
MAX_LISTED_PATHS = 200


@dataclass(frozen=True)
class Ran:
    """One step's run, as the finish_<step> methods see it."""

    step: str
    iteration: int
    cid: str
    started: str  # the commit holding step.started
    before: str | None  # the work tree id before a read-only step
    result: StepResult
    report: Usage | None  # what the step wrote to HARNESS_REPORT_FILE

    @property
    def passed(self) -> bool:
        return self.result.exit_code == 0 and not self.result.timed_out

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    def data(self) -> dict[str, Any]:
        result = self.result
        return {
            "call_id": self.cid,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "duration_s": round(result.duration_s, 3),
            "output_tail": fit_text(result.output_tail),
        }


class Progress:
    """A live line on a terminal (stderr) while a step runs; nothing at all otherwise, so
    what goes to stdout and to files never changes."""

    def __init__(self, stream: TextIO | None, text: Callable[[float], str]) -> None:
        self.stream, self.text = stream, text
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.stream is not None:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        began = time.monotonic()
        assert self.stream is not None
        while True:
            self.stream.write("\r\x1b[K" + self.text(time.monotonic() - began))
            self.stream.flush()
            if self.done.wait(1.0):
                return

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None and self.stream is not None:
            self.thread.join()
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class GitConfigGuard:
    """Files outside the worktree through which a step could make the harness's own git
    calls run commands (a filter driver, gpg.program, core.sshCommand) or point them at
    another repository. They are read before a step and compared right after it."""

    def __init__(self, paths: list[Path]) -> None:
        self.before = {path: _read_or_none(path) for path in paths}

    def changed(self) -> list[str]:
        return [str(p) for p, data in self.before.items() if _read_or_none(p) != data]

    def restore(self) -> None:
        for path, data in self.before.items():
            if _read_or_none(path) == data:
                continue
            if data is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, data)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


class ChildRecord:
    """The process group of the step running now, kept next to the goal's lock.

    A harness killed with SIGKILL cannot end its step's processes; the next run (holding
    the lock) ends the group it finds recorded before it resumes the goal.
    """

    def __init__(self, folder: Path, goal_id: str) -> None:
        self.path = folder / f"{goal_id}.child"

    def save(self, pid: int, call: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(f"{pid} {call}\n")

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def end_leftover(self) -> None:
        try:
            pid_text, call = self.path.read_text().split()
            pid = int(pid_text)
        except (FileNotFoundError, ValueError):
            return
        end_marked_group(pid, f"HARNESS_CALL_ID={call}")
        self.clear()


class Clock(Protocol):
    def now(self) -> str: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def monotonic(self) -> float:
        return time.monotonic()


@dataclass(frozen=True)
class RunContext:
    control: Control
    secret: Secret
    clock: Clock
    print_line: Callable[[str], None]
    base_env: Mapping[str, str]
    max_steps: int | None = None
    remote: Remote | None = None
    runner: str = ""
    progress: TextIO | None = None  # a terminal to show the running step on


def later(ts: str, seconds: int) -> str:
    """The ISO time `seconds` after `ts` (both in the clock's format)."""
    moment = datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def increase(total: float | None, previous: float | None) -> float:
    """What a reported total proves was spent since `previous` (that session's last total).

    A new session's total is all new. A total below the last one means the tool restarted
    its count; it is taken whole, so the budget errs towards counting more, never less.
    """
    if total is None or total < 0:
        return 0
    if previous is None or total < previous:
        return total
    return total - previous


def spend_data(cell: Cell, usage: Usage) -> dict[str, Any]:
    """Cost and turns of one build as increases, plus the raw totals the next one needs."""
    last = {name: (cost, turns) for name, cost, turns in cell.sessions}
    before = last.get(usage.session) if usage.session else None
    cost = increase(usage.cost_usd, before[0] if before else None)
    turns = increase(usage.turns, before[1] if before else None)
    data: dict[str, Any] = {"cost_usd": float(cost), "turns": int(turns)}
    if usage.session:
        data |= {
            "session": usage.session,
            "reported_cost_usd": usage.cost_usd,
            "reported_turns": usage.turns,
        }
    return data


def call_id(goal_id: str, iteration: int, step: str) -> str:
    return hashlib.sha256(f"{goal_id}\0{iteration}\0{step}".encode()).hexdigest()[:16]


def is_protected(path: str) -> bool:
    return path.startswith(PROTECTED_PREFIXES) or path.endswith(".approval")


def fit_text(text: str | None, limit: int = TEXT_FIELD_BYTES) -> str | None:
    """Cut `text` from the front until its JSON form fits `limit` bytes, marking the cut."""
    if text is None or len(json.dumps(text, ensure_ascii=False).encode()) <= limit:
        return text
    keep = limit // 6
    return f"[… {len(text) - keep} characters cut]\n" + text[-keep:]


def budget_limits(goal: Goal) -> dict[str, Any]:
    b = goal.budget
    return {
        "iterations": b.max_iterations,
        "seconds": b.max_seconds,
        "cost_usd": b.max_cost_usd,
        "turns": b.max_turns,
        "passes": goal.halt.max_passes,
    }


def goal_steps(goal: Goal) -> list[str]:
    optional = {"plan": goal.plan, "review": goal.review, "ship": goal.ship}
    return [
        s
        for s in ("plan", "build", "judge", "review", "ship")
        if s in ("build", "judge") or optional[s]
    ]


def build_prompt(goal: Goal, cell: Cell, lessons: Sequence[Lesson] = ()) -> str:
    parts = [
        f"Goal: {goal.id}",
        f"Iteration: {cell.iteration} of {cell.limit.iterations}",
        "",
        "Objective:",
        goal.objective.rstrip("\n"),
        "",
    ]
    if cell.plan_notes:
        parts += ["Plan:", cell.plan_notes.rstrip("\n"), ""]
    if lessons:
        parts += [prompt_section(lessons).rstrip("\n"), ""]
    if cell.failing_test:
        parts += [
            "This is a repair round: the previous attempt did not pass.",
            f"Failing: {cell.failing_test}",
            "Output tail:",
            (cell.feedback or "").rstrip("\n"),
            "",
        ]
    if goal.expect_files:
        parts += ["These files must exist when you are done: " + ", ".join(goal.expect_files), ""]
    return "\n".join(parts)


class Recorder:
    """Appends events for one goal, folds them into its cell, prints them, and commits."""

    def __init__(
        self,
        goal_id: str,
        key: bytes,
        worktree: Worktree,
        paths: GoalPaths,
        loaded: Loaded,
        clock: Clock,
        print_line: Callable[[str], None],
    ) -> None:
        self.goal_id, self.key, self.clock, self.print_line = goal_id, key, clock, print_line
        self.wt, self.paths = worktree, paths
        self.ledger, self.report = loaded.ledger, loaded.report
        self.cell = loaded.cell
        self.publish: Callable[[], None] | None = None

    def emit(self, type: str, step: str | None, iteration: int, data: Mapping[str, Any]) -> None:
        record = self.ledger.append(type, step, iteration, data, self.clock.now())
        failpoints.hit("after_append")
        position = Position(record.event.seq, record.hash)
        self.cell = apply(self.cell, record.event, position)
        self.report.add(record.event)
        self.print_line(text_line(record.event))

    def checkpoint(self, message: str) -> str:
        write_cell(self.paths.cell, self.cell, self.key)
        failpoints.hit("after_cell_write")
        atomic_write(self.paths.report, self.report.render(self.cell).encode())
        failpoints.hit("before_commit")
        commit = self.wt.commit(f"harness({self.goal_id}): {message}")
        failpoints.hit("after_commit")
        if self.publish is not None:
            self.publish()
        return commit

    def gate(self, status: str, reason: str, detail: str) -> None:
        self.emit(
            "goal.gated",
            None,
            self.cell.iteration,
            {
                "status": status,
                "reason": reason,
                "detail": fit_text(detail, 4000),
                "commit": self.wt.head(),
            },
        )
        self.checkpoint(f"{status} ({reason})")


class GoalRunner(Recorder):
    """Drives one loaded goal in its worktree. The caller holds the goal's lock."""

    def __init__(
        self,
        ctx: RunContext,
        goal: Goal,
        verdict: Verdict | None,
        worktree: Worktree,
        paths: GoalPaths,
        loaded: Loaded,
        lessons: Sequence[Lesson] = (),
    ) -> None:
        key = ctx.secret.goal_key(goal.id)
        super().__init__(goal.id, key, worktree, paths, loaded, ctx.clock, ctx.print_line)
        self.ctx, self.goal, self.verdict = ctx, goal, verdict
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
        assert self.verdict is not None
        kind = "goal.started" if self.cell.goal_sha256 is None else "goal.revised"
        self.emit(
            kind,
            None,
            self.cell.iteration,
            {
                "goal_sha256": self.goal.sha256,
                "owners_sha256": owners_sha256,
                "approved_by": list(self.verdict.principals),
                "steps": goal_steps(self.goal),
                "limits": budget_limits(self.goal),
                "no_progress_passes": self.goal.halt.no_progress_passes,
                "control_commit": self.ctx.control.commit,
            }
            | self.command_hits(),
        )
        self.checkpoint(kind.replace("goal.", "goal "))

    def command_hits(self) -> dict[str, Any]:
        """A declared step command that itself deploys, drops or pushes parks the goal first.
        The ship command is left out: it already needs a signed decision."""
        from harness.trust.classify import classes_of, classify_command, summarize

        extra = self.ctx.control.config.destructive
        specs = (self.goal.plan, self.goal.build, self.goal.judge, self.goal.review)
        hits = [h for spec in specs if spec for h in classify_command(spec.run, extra)]
        if not hits:
            return {}
        return {"command_classes": list(classes_of(hits)), "command_detail": summarize(hits)}

    # ---- the loop -----------------------------------------------------------------------

    def advance(self) -> Cell:
        while self.cell.status not in TERMINAL | WAITING:
            if self.ctx.max_steps is not None and self.steps_run >= self.ctx.max_steps:
                break
            self.step_once()
        return self.cell

    def step_once(self) -> None:
        cell = self.cell
        if cell.in_flight is not None:
            self.resume_cut_off()
            return
        pending = pending_classes(cell)
        if pending:
            detail = cell.destructive_detail or ", ".join(pending)
            self.gate("parked_at_eyes", f"destructive:{pending[0]}", detail)
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
        elif cell.step == "build" and cell.no_progress_count >= cell.no_progress_passes:
            self.gate(
                "needs_attention",
                "no_progress",
                f"failing {cell.failing_test} with an unchanged tree for {cell.no_progress_count} passes",
            )
        elif cell.step == "build" and cell.exhausted():
            self.gate("needs_attention", "budget_exhausted", self.spend_text(cell.exhausted()))
        else:
            self.run(cell.step, cell.iteration)

    def spend_text(self, keys: list[str]) -> str:
        used, limit = self.cell.used, self.cell.limit
        return ", ".join(f"{key} {getattr(used, key)}/{getattr(limit, key)}" for key in keys)

    def lessons_for_build(self) -> tuple[Lesson, ...]:
        """Lessons matching the objective or the failing test, and the one whose check failed."""
        failing = self.cell.failing_test
        chosen = select(self.lessons, self.goal.objective, failing)
        failed = [x for x in self.lessons if failing == f"lesson:{x.name}" and x not in chosen]
        return (*failed, *chosen)

    def check_lessons(self) -> list[tuple[Lesson, StepResult]]:
        """Run the check of every lesson a build was given: read-only, like the judge."""
        checks = [x for x in self.lessons if x.name in self.cell.lessons_given and x.check]
        results = []
        for lesson in checks:
            assert lesson.check is not None
            env = child_env(
                self.ctx.base_env,
                self.ctx.control.config.scrub_env,
                {"HARNESS_GOAL": self.goal.id, "HARNESS_STEP": "lesson-check"},
            )
            result = run_step(lesson.check, self.wt.path, env, b"", lesson.check_timeout_s)
            passed = result.exit_code == 0 and not result.timed_out
            self.emit(
                "lesson.checked",
                None,
                self.cell.iteration,
                lesson.as_ref()
                | {
                    "exit_code": result.exit_code,
                    "passed": passed,
                    "output_tail": fit_text(result.output_tail, 4000),
                },
            )
            results.append((lesson, result))
        return [(x, r) for x, r in results if r.exit_code != 0 or r.timed_out]

    def done_gate(self) -> None:
        missing = [f for f in self.goal.expect_files if not (self.wt.path / f).exists()]
        failed = [] if missing else self.check_lessons()
        if failed:
            lesson, result = failed[0]
            detail = f"{result.output_tail}\n\nThe lesson:\n{lesson.text}"
            self.emit(
                "done.blocked",
                None,
                self.cell.iteration,
                {
                    "missing": [],
                    "lessons_failed": [x.name for x, _ in failed],
                    "tree": self.wt.work_tree_id(),
                    "detail": fit_text(detail, 8000),
                },
            )
            self.checkpoint("done gate blocked by a lesson check")
        elif missing:
            tree = self.wt.work_tree_id()
            self.emit(
                "done.blocked",
                None,
                self.cell.iteration,
                {
                    "missing": missing,
                    "tree": tree,
                    "detail": "expected files are missing: " + ", ".join(missing),
                },
            )
            self.checkpoint("done gate blocked")
        elif "ship" in self.cell.steps:
            self.gate(
                "parked_at_eyes",
                "ship",
                f"commit {self.wt.head()} passed the done gate; ship needs a signed decision",
            )
        else:
            self.emit("goal.completed", None, self.cell.iteration, {"commit": self.wt.head()})
            self.checkpoint("completed")

    def resume_cut_off(self) -> None:
        flight = self.cell.in_flight
        assert flight is not None
        foreign = flight.runner not in ("", self.ctx.runner)
        if foreign and self.ctx.clock.now() < flight.lease_until:
            # Another clone started this step and its lease has not run out: not a crash.
            raise Busy(
                f"goal {self.goal.id}: {flight.step}[{flight.iteration}] is being run by "
                f"{flight.runner} (lease until {flight.lease_until})"
            )
        if flight.step == "ship":
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
            flight.step,
            flight.iteration,
            {"call_id": flight.call_id, "changed": changed[:MAX_LISTED_PATHS]},
        )
        if self.tampered(flight.base, changed, exclude_own=True):
            return
        if self.cell.used.passes >= self.cell.limit.passes:
            # A step that dies every time must still reach the ceiling, never loop.
            self.gate("needs_attention", "max_passes", self.spend_text(["passes"]))
            return
        self.run(flight.step, flight.iteration)

    def changed_since(self, base: str) -> list[str]:
        return self.wt.changed_paths(base) if self.wt.is_ancestor(base) else []

    # ---- running one step ---------------------------------------------------------------

    def run(self, step: str, iteration: int) -> None:
        self.steps_run += 1
        cid = call_id(self.goal.id, iteration, step)
        lease = getattr(self.goal, step).timeout_s + LEASE_GRACE_S
        data: dict[str, Any] = {
            "call_id": cid,
            "base": self.wt.head(),
            "runner": self.ctx.runner,
            "lease_until": later(self.ctx.clock.now(), lease),
        }
        self.given = self.lessons_for_build() if step == "build" else ()
        if self.given:
            data["lessons"] = [lesson.as_ref() for lesson in self.given]
        self.emit("step.started", step, iteration, data)
        started = self.checkpoint(f"{step} {iteration} started")
        before = self.wt.work_tree_id() if step in READ_ONLY_STEPS else None
        failpoints.hit(f"in_{step}")
        guard = GitConfigGuard(self.wt.guarded_files())
        try:
            result, report = self.execute(step, iteration, cid)
        except Interrupted as stop:
            # The step's group is already ended (steps.run_step); the step stays in flight,
            # so the next run handles it as cut off (a ship step: outcome unknown).
            self.emit("step.interrupted", step, iteration, {"call_id": cid, "signal": stop.name})
            self.checkpoint(f"{step} {iteration} interrupted by {stop.name}")
            raise
        ran = Ran(step, iteration, cid, started, before, result, report)
        touched = guard.changed()
        if touched:
            # Before any git call: a changed config could make git run the agent's commands.
            guard.restore()
            tamper = ran.data() | {"result": "tamper", "touched": touched}
            self.emit("step.finished", step, iteration, tamper)
            self.gate(
                "needs_attention", "tamper", "changed git configuration: " + ", ".join(touched)
            )
            return
        getattr(self, f"finish_{step}")(ran)

    def execute(self, step: str, iteration: int, cid: str) -> tuple[StepResult, Usage | None]:
        """Run the step's command; its result and what it wrote to HARNESS_REPORT_FILE."""
        spec = getattr(self.goal, step)
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
            },
        )
        children = ChildRecord(self.ctx.control.repo.harness_dir() / "locks", self.goal.id)
        progress = Progress(self.ctx.progress, self.progress_text(step, iteration))

        def started(pid: int) -> None:
            children.save(pid, cid)
            progress.start()  # only after the fork: no thread exists while the child is made

        try:
            result = run_step(
                spec.run, self.wt.path, env, prompt.encode(), spec.timeout_s, on_start=started
            )
            return result, read_report_file(scratch / "report.json")
        finally:
            progress.stop()
            children.clear()
            shutil.rmtree(scratch, ignore_errors=True)

    def progress_text(self, step: str, iteration: int) -> Callable[[float], str]:
        used, limit = self.cell.used, self.cell.limit

        def text(elapsed: float) -> str:
            minutes, seconds = divmod(int(elapsed), 60)
            return (
                f"{self.goal.id} {step}[{iteration}] {minutes:02d}:{seconds:02d} · "
                f"iterations {used.iterations}/{limit.iterations} · "
                f"cost ${used.cost_usd:.2f}/${limit.cost_usd:.2f} · passes {used.passes}/{limit.passes}"
            )

        return text

    def finish(self, ran: Ran, data: dict[str, Any]) -> None:
        self.emit("step.finished", ran.step, ran.iteration, data)
        self.checkpoint(f"{ran.step} {ran.iteration} finished")

    def finish_build(self, ran: Ran) -> None:
        usage = combine(ran.report, parse_output(self.goal.build.format, ran.result.stdout_tail))
        prices = self.ctx.control.config.prices
        if usage.cost_usd is None and usage.tokens is not None and prices is not None:
            usage = replace(usage, cost_usd=prices.cost(*usage.tokens))
        changed = self.changed_since(ran.started)
        data = (
            ran.data()
            | spend_data(self.cell, usage)
            | {
                "summary": fit_text(usage.summary, 4000),
                "agent_error": usage.error,
                "changed": changed[:MAX_LISTED_PATHS],
                "tree": self.wt.work_tree_id(),
            }
        )
        finished = (ran.step, ran.iteration, data)
        if self.tampered(ran.started, changed, exclude_own=False, finished=finished):
            return
        self.finish(ran, data | self.destructive_data(ran.started))

    def destructive_data(self, base: str) -> dict[str, Any]:
        """What in this build's change falls in a destructive class (parks until unparked)."""
        from harness.trust.classify import classes_of, classify_changes, parse_diff, summarize

        hits = classify_changes(
            parse_diff(self.wt.diff_text(base)), self.ctx.control.config.destructive
        )
        if not hits:
            return {}
        return {
            "destructive_classes": list(classes_of(hits)),
            "destructive_detail": fit_text(summarize(hits), 4000),
            "destructive": [fit_text(h.describe(), 300) for h in hits[: MAX_LISTED_PATHS // 4]],
        }

    def finish_judge(self, ran: Ran) -> None:
        junit = self.goal.judge.junit
        failing = None
        if not ran.passed:
            junit_path = self.wt.path / junit if junit else None
            failing = first_failing_test(ran.result.output_tail, junit_path)
        if junit:
            self.drop_untracked(junit)
        self.finish_read_only(ran, {"result": ran.verdict, "failing_test": failing})

    def finish_review(self, ran: Ran) -> None:
        stdout = fit_text(ran.result.stdout_tail)
        self.finish_read_only(ran, {"result": ran.verdict, "stdout_tail": stdout})

    def finish_plan(self, ran: Ran) -> None:
        self.finish_review(ran)  # the same record: its stdout goes into the first prompt

    def finish_ship(self, ran: Ran) -> None:
        self.emit("step.finished", ran.step, ran.iteration, ran.data() | {"result": ran.verdict})
        if ran.passed:
            data = {"commit": self.wt.head(), "detail": "shipped"}
            self.emit("goal.completed", None, ran.iteration, data)
        else:
            detail = f"the ship step exited {ran.result.exit_code}"
            self.emit("goal.failed", None, ran.iteration, {"detail": detail})
        self.checkpoint("ship finished")

    def finish_read_only(self, ran: Ran, extra: dict[str, Any]) -> None:
        after = self.wt.work_tree_id()
        data = ran.data() | extra | {"tree": after}
        if after == ran.before:
            self.finish(ran, data)
            return
        changed = self.wt.git("diff", "--name-only", ran.before or "", after).splitlines()
        violation = data | {"result": "violation", "changed": changed[:MAX_LISTED_PATHS]}
        self.emit("step.finished", ran.step, ran.iteration, violation)
        self.gate(
            "needs_attention",
            "read_only_violation",
            f"the {ran.step} step is read-only but changed: {', '.join(changed[:20])}",
        )

    def drop_untracked(self, rel: str) -> None:
        """The judge's JUnit file is a transient artifact unless the repository tracks it."""
        path = self.wt.path / rel
        tracked = self.wt.git("ls-files", "--", rel)
        if path.is_file() and not tracked:
            path.unlink()

    # ---- human decisions ----------------------------------------------------------------

    def cross_gate(self, verdict: Verdict) -> None:
        """Record a signed decision's use; the fold moves the goal on."""
        statement = verdict.record.statement
        data: dict[str, Any] = {
            "decision": statement.decision,
            "gate": self.cell.gate,
            "signers": list(verdict.principals),
            "commit": statement.commit,
            "ledger": statement.ledger,
            "signature_sha256": hashlib.sha256(verdict.record.armored.encode()).hexdigest(),
        }
        if statement.decision.startswith("extend-budget "):
            data["limits"] = extended_limits(self.cell, statement.decision)
        self.emit("decision.used", None, self.cell.iteration, data)
        self.checkpoint(f"decision {statement.decision}")

    def rotate_owners(self, verdict: Verdict, owners_sha256: str, owners_commit: str) -> None:
        data = {
            "owners_sha256": owners_sha256,
            "owners_commit": owners_commit,
            "signers": list(verdict.principals),
        }
        self.emit("owners.rotated", None, self.cell.iteration, data)
        self.checkpoint("owners rotated")

    # ---- tampering ----------------------------------------------------------------------

    def tampered(
        self,
        base: str,
        changed: list[str],
        *,
        exclude_own: bool,
        finished: tuple[str, int, dict[str, Any]] | None = None,
    ) -> bool:
        """A build that touched a protected path: restore them, record, stop at tamper."""
        rewritten = not self.wt.is_ancestor(base)
        own = self.paths.rel + "/"
        hits = [p for p in changed if is_protected(p) and not (exclude_own and p.startswith(own))]
        if not hits and not rewritten:
            return False
        if rewritten:
            self.wt.git("reset", "-q", "--soft", base)
            hits = [p for p in self.wt.changed_paths(base) if is_protected(p)]
        self.wt.restore_paths(base, hits)
        # Our own files come back from memory: the in-memory cell and report are authoritative.
        write_cell(self.paths.cell, self.cell, self.key)
        if finished is not None:
            step, iteration, data = finished
            self.emit(
                "step.finished",
                step,
                iteration,
                data | {"result": "tamper", "tree": self.wt.work_tree_id()},
            )
        detail = ("history rewritten; " if rewritten else "") + "touched " + ", ".join(hits[:20])
        self.gate("needs_attention", "tamper", detail)
        return True
