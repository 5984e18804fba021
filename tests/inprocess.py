"""The loop driven in this process: a fixed clock and a goal runner assembled as
`harness.loop.advance.advance_goal` assembles it, on a ManagedRepo (tests/managed.py).

The step commands (the scripted agent and judge) are still real child processes; only the
harness itself runs in the test's own process, so a test can hold its objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from harness.loop.advance import advance_goal
from harness.loop.context import RunContext
from harness.loop.control import Control, open_control
from harness.loop.controller import GoalRunner
from harness.record.cell import Cell
from harness.record.hydrate import GoalPaths, committed_view, load
from harness.record.ledger import Event, Ledger
from harness.store.gitrepo import Repo
from harness.store.worktree import ensure_worktree
from harness.trust.secret import Secret
from tests.managed import SECRET, ManagedRepo

START = "2030-01-01T00:00:00.000Z"


class FakeClock:
    """harness.loop.controller.Clock: `now()` gives a fixed time, then moves on by `step_s`."""

    def __init__(self, start: str = START, step_s: float = 1.0) -> None:
        self.moment = datetime.fromisoformat(start.replace("Z", "+00:00"))
        self.step = timedelta(seconds=step_s)
        self.ticks = 0

    def now(self) -> str:
        shown = self.moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.moment += self.step
        return shown

    def monotonic(self) -> float:
        self.ticks += 1
        return float(self.ticks)


SECRET_VALUE = Secret(SECRET.encode(), "HARNESS_SECRET")


@dataclass
class InProcess:
    """One managed repository's goal, run here with a FakeClock; printed lines are kept."""

    repo: ManagedRepo
    clock: FakeClock = field(default_factory=FakeClock)
    lines: list[str] = field(default_factory=list)

    @property
    def git_repo(self) -> Repo:
        return Repo.discover(self.repo.root)

    @property
    def paths(self) -> GoalPaths:
        return GoalPaths(self.repo.worktree, self.repo.goal_id)

    @property
    def key(self) -> bytes:
        return SECRET_VALUE.goal_key(self.repo.goal_id)

    def control(self) -> Control:
        return open_control(self.git_repo, SECRET_VALUE)

    def context(self, control: Control | None = None, **options: Any) -> RunContext:
        return RunContext(
            control or self.control(),
            SECRET_VALUE,
            self.clock,
            self.lines.append,
            self.repo.env,
            **options,
        )

    def runner(self, **options: Any) -> GoalRunner:
        """A GoalRunner on the goal's worktree (made if missing), its goal started."""
        ctx = self.context(**options)
        control, goal_id = ctx.control, self.repo.goal_id
        goal = control.goal(goal_id, control.principals())
        approval = control.run_approval(goal).approval
        wt = ensure_worktree(self.git_repo, goal_id, control.branch(goal_id), control.commit)
        paths = GoalPaths(wt.path, goal_id)
        loaded = load(paths, self.key, committed_view(paths), repair=True)
        runner = GoalRunner(ctx, goal, approval, wt, paths, loaded, control.lessons())
        runner.start_or_revise(control.owners_sha256)
        return runner

    def advance(self, **options: Any) -> Cell:
        return advance_goal(self.git_repo, self.context(**options), self.repo.goal_id)

    def events(self) -> list[Event]:
        ledger = Ledger(self.paths.events, self.repo.goal_id, self.key)
        return [record.event for record in ledger.records()]

    def types(self) -> list[str]:
        return [event.type for event in self.events()]
