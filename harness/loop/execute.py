"""Running one step's command: its prompt and variables, its place and its containment.

A build runs in the goal's worktree; every other step on a throw-away layer over it, the ship
step on a fresh checkout of the signed commit (sandbox.md). The command runs under the
run's sandbox, its children recorded (a killed run ends them) and its progress shown; a
build's spend is read from its output as it runs. What its result does is `finish`'s.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import TrustFailure
from harness.loop.agents import Meter, Usage, read_report_file
from harness.loop.binding import same_tree
from harness.loop.contain.layer import LayerFailure
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import (
    VANISHED_TRIES,
    Contained,
    Sandbox,
    contain,
    resolve,
    vanished_cover,
)
from harness.loop.context import RunContext
from harness.loop.guards import ChildRecord
from harness.loop.progress import Progress, progress_text
from harness.loop.prompt import build_prompt
from harness.loop.recorder import Recorder
from harness.loop.shipcommit import ship_env, unfaithful_refusal
from harness.loop.spend import remaining_env
from harness.loop.steps import StepResult, cannot_start, child_env, run_step
from harness.model.goal import BuildSpec, Goal, JudgeSpec, StepSpec
from harness.model.lessons import Lesson
from harness.record.events import StepName
from harness.store.gitrepo import git_text

NO_KEY = "this runner has no key to sign it with (`harness runner-key new`)"


class StepCommands:
    """Runs one goal's step commands (and its lessons' checks) in their place, contained;
    what they are given comes from the goal's cell, as its recorder holds it."""

    def __init__(self, ctx: RunContext, goal: Goal, rec: Recorder) -> None:
        self.ctx, self.goal, self.rec = ctx, goal, rec
        # What the last ship step was given as HARNESS_ATTESTATION (its bundle's SHA-256),
        # or why it got none: recorded with its step.finished.
        self.attestation: dict[str, str] = {}

    def execute(
        self,
        step: StepName,
        spec: StepSpec | BuildSpec | JudgeSpec,
        iteration: int,
        cid: str,
        given: Sequence[Lesson],
        ship_from: str | None,
    ) -> tuple[StepResult, Usage | None, Usage | None, dict[str, Any] | None]:
        """Run the step's command: its result, its HARNESS_REPORT_FILE, a build's spend, and
        the egress proxy's record when its goal names an allowlist (`egress`, for the step's
        `step.finished`). `given`: the lessons a build's prompt holds; `ship_from`: the
        commit a ship decision named in this process (`ship_checkout`)."""
        goal, wt = self.goal, self.rec.wt
        scratch = Path(tempfile.mkdtemp(prefix=f"harness-{goal.id}-"))
        prompt = build_prompt(goal, self.rec.cell, given)
        (scratch / "prompt.txt").write_text(prompt)
        env = child_env(
            self.ctx.base_env,
            self.ctx.control.config.step_scrub(),
            {
                "HARNESS_GOAL": goal.id,
                "HARNESS_ITERATION": str(iteration),
                "HARNESS_STEP": step,
                "HARNESS_PROMPT_FILE": str(scratch / "prompt.txt"),
                "HARNESS_REPORT_FILE": str(scratch / "report.json"),
                "HARNESS_CALL_ID": cid,
            }
            | remaining_env(self.rec.cell),
        )
        children = ChildRecord(self.ctx.control.repo.harness_dir() / "locks", goal.id)
        progress = Progress(
            self.ctx.progress, progress_text(goal.id, step, iteration, self.rec.cell)
        )

        def started(pid: int) -> None:
            children.save(pid, cid)
            progress.start()  # only after the fork: no thread exists while the child is made

        cwd = wt.path
        try:
            refused = None
            if step == "ship":  # exactly the signed commit, never the worktree an agent touched
                cwd = self.ship_checkout(scratch / "checkout", ship_from)
                signed = git_text(["rev-parse", "HEAD"], cwd)
                records = self.rec.ledger.records()
                env |= ship_env(records, wt.path, goal.id, goal.objective, signed)
                env |= self.attest(scratch, env.get("HARNESS_SHIP_COMMIT"))
                refused = unfaithful_refusal(cwd, self.rec.ledger.records())
            meter: Meter | None = None
            egress: dict[str, Any] | None = None

            def once(box: Contained) -> StepResult:
                nonlocal meter, egress  # the last start's: an earlier one is taken to
                # have never run (its bwrap's exit 1 and line; sandbox.md, "Sockets")
                meter = self.meter(box.records_env) if step == "build" else None
                started_once = run_step(
                    box.argv,
                    cwd,
                    box.env,
                    prompt.encode(),
                    spec.timeout_s,
                    on_start=started,
                    on_stdout=meter.feed if meter else None,
                    bwrap=box.bwrap,
                    prepare=box.prepare,
                )
                egress = box.egress.stop() if box.egress is not None else None
                return started_once

            try:
                if refused is not None:
                    raise LayerFailure(refused)
                result = self.run_contained(once, step, spec.run, env, scratch, cwd, spec)
            except LayerFailure as exc:  # a read-only step without its copy cannot start
                result = cannot_start(str(exc))
            spent = meter.finish() if meter else None
            return result, read_report_file(scratch / "report.json"), spent, egress
        finally:
            progress.stop()
            children.clear()
            if cwd != wt.path:
                wt.remove_checkout(cwd)
            shutil.rmtree(scratch, ignore_errors=True)

    def attest(self, scratch: Path, ship_commit: str | None) -> dict[str, str]:
        """`HARNESS_ATTESTATION`: the bundle `harness attest` writes, in the step's scratch
        folder (bound into the sandbox, as the prompt is). Without it the step still ships:
        why is kept in `self.attestation` for its `step.finished` (attest.md)."""
        from harness.errors import HarnessError
        from harness.loop.attest import BUNDLE_NAME, ENV_ATTESTATION, make_bundle

        key = self.ctx.runner_key
        if key is None:
            self.attestation = {"attestation_missing": NO_KEY}
            return {}
        try:
            records = list(self.rec.ledger.records())
            made = make_bundle(
                self.ctx.control, records, self.goal.id, self.rec.wt.path, key, self.ctx.pending
            )
        except HarnessError as exc:
            self.attestation = {"attestation_missing": exc.message}
            return {}
        if made.ship_commit != ship_commit:  # one record, one commit: never a second one
            self.attestation = {"attestation_missing": f"its subject is not {ship_commit}"}
            return {}
        (scratch / BUNDLE_NAME).write_bytes(made.data)
        self.attestation = {"attestation": made.sha256}
        return {ENV_ATTESTATION: str(scratch / BUNDLE_NAME)}

    # ---- containment (sandbox.md) ---------------------------------------------------------

    @functools.cached_property
    def sandbox(self) -> Sandbox:
        return resolve(self.ctx.control.config.sandbox, self.ctx.base_env)

    def run_contained(
        self,
        run: Callable[[Contained], StepResult],
        step: str,
        argv: Sequence[str],
        env: dict[str, str],
        scratch: Path | None = None,
        work: Path | None = None,
        spec: StepSpec | BuildSpec | JudgeSpec | None = None,
    ) -> StepResult:
        """`run` (which starts the command) in the step's containment. Only a build writes
        the worktree; every other step works on a throw-away layer, from which the judge's
        JUnit file is copied back. `work` is the folder the step runs in when it is not the
        goal's worktree (the ship step's checkout of the signed commit). `spec`: the goal's
        step, whose network it gets (a lesson check shares the runner's).

        When bwrap stopped before the command (exit 1) because a path it was to cover was
        removed since the walk found it (`vanished_cover`), nothing of the step ran: it
        starts again with a fresh walk, up to VANISHED_TRIES starts in all (sandbox.md,
        "Sockets", which says what this trusts)."""
        self.rec.fresh = None  # a step command runs: what was staged is no longer known
        place = self.place()
        if work is not None and work != place.worktree:
            place = dataclasses.replace(place, worktree=work)
        junit = self.goal.judge.junit
        keep = (junit,) if step == "judge" and junit else ()
        network = spec.network if spec is not None else True
        allow = spec.allow if spec is not None else None
        for tries_left in reversed(range(VANISHED_TRIES)):
            with contain(
                self.sandbox,
                place,
                argv,
                env,
                writable=step == "build",
                scratch=scratch,
                keep=keep,
                network=network,
                allow=allow,
            ) as box:
                result = run(box)
            if not (
                tries_left
                and result.exit_code == 1
                and vanished_cover(result.output_tail, box.argv)
            ):
                break
        return result

    def place(self) -> Place:
        """The paths this goal's steps see, keep or must not see."""
        config = self.ctx.control.config
        return Place.of(
            self.ctx.control.repo, self.goal.id, self.ctx.base_env, config.sandbox_binds
        )

    def ship_checkout(self, path: Path, ship_from: str | None) -> Path:
        """A fresh checkout of the commit the ship decision named (in this process) or of
        the head, whose tree `bound()` has just compared with the cell's."""
        wt = self.rec.wt
        commit = ship_from or wt.head()
        if not same_tree(wt, commit, self.rec.cell):
            raise TrustFailure(f"goal {self.goal.id}: commit {commit} is not what the cell names")
        wt.add_checkout(commit, path)
        return path

    def meter(self, env: dict[str, str]) -> Meter:
        """Reads the build's stdout as it arrives; `since` dates the tool's own records."""
        prices = self.ctx.control.config.prices
        return Meter(self.goal.build.format, env, self.rec.wt.path, time.time(), prices)
