"""How a step ended: its `step.finished` event, and the gate a tamper or violation stops at.

A build's finish records what it spent and changed, after checking that it left the
protected paths and the history alone; a read-only step's finish checks that it left the
tree alone. Each step's handler is in `FINISH`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.loop import quarantine
from harness.loop.agents import Usage, combine, parse_output
from harness.loop.clock import later
from harness.loop.context import RunContext
from harness.loop.guards import is_protected
from harness.loop.judge import first_failing_test
from harness.loop.recorder import Recorder, fit_text
from harness.loop.spend import spend_data
from harness.loop.steps import StepResult
from harness.model.goal import Goal
from harness.record.cell import write_cell
from harness.record.events import StepName
from harness.record.evidence import DIFF_BYTES, diff_command, fit_head
from harness.record.hydrate import GoalPaths, Loaded
from harness.record.ledger import Event
from harness.store.gitrepo import run_git
from harness.store.worktree import Worktree

if TYPE_CHECKING:
    from harness.trust.destructive.diff import FileChange
    from harness.trust.destructive.textlike import IgnoredWalk

MAX_LISTED_PATHS = 200
MAX_WARNED = 50  # warned hits kept per build: evidence for the owners, bounded
SHIP_TAIL_LINES = 20  # of the ship step's output, in the ship_failed gate's detail


def unavailable_detail(tries: int, message: str) -> str:
    """The agent_unavailable gate's detail: how often, and the tool's own words."""
    times = "once" if tries == 1 else f"on {tries} tries in a row"
    return f"the model API failed {times}: {message}"


def ship_failed_detail(data: Mapping[str, Any]) -> str:
    """The ship_failed gate's detail: how the step ended and the tail of its output."""
    if data.get("timed_out"):
        how = "timed out"
    elif data.get("exit_code") is None:
        how = f"was ended by {data.get('signal') or 'a signal'}"
    else:
        how = f"exited {data.get('exit_code')}"
    tail = (data.get("output_tail") or "").strip()
    lines = tail.split("\n")[-SHIP_TAIL_LINES:]
    return f"the ship step {how}" + (": " + "\n".join(lines) if lines else " (no output)")


def violation_detail(step: str, changed: Sequence[str]) -> str:
    """The read_only_violation gate's detail: which files, that they are gone, what next."""
    return (
        f"the {step} step is read-only but changed: {', '.join(changed[:20])} (restored, not"
        " committed; git-ignore them or change the command, then `harness unpark` runs the"
        f" {step} step again)"
    )


@dataclass(frozen=True)
class Ran:
    """One step's run, as the finish handlers see it."""

    step: StepName
    iteration: int
    cid: str
    started: str  # the commit holding step.started
    before: str | None  # the work tree id before a read-only step
    result: StepResult
    report: Usage | None  # what the step wrote to HARNESS_REPORT_FILE
    agent: Usage | None = None  # a build's spend, read from its output as it ran

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
        } | ({"signal": result.signal} if result.signal else {})


class Finisher(Recorder):
    """Records how one goal's steps end, in its worktree."""

    def __init__(
        self, ctx: RunContext, goal: Goal, worktree: Worktree, paths: GoalPaths, loaded: Loaded
    ) -> None:
        key = ctx.secret.goal_key(goal.id)
        super().__init__(goal.id, key, worktree, paths, loaded, ctx.clock, ctx.print_line)
        self.ctx, self.goal = ctx, goal
        self.redactor = ctx.redactor
        # Before a build: the walk for the ignored entries already there (`new_ignored`).
        self.ignored_before: IgnoredWalk | None = None

    def changed_since(self, base: str) -> list[str]:
        return self.wt.changed_paths(base) if self.wt.is_ancestor(base) else []

    def finish(self, ran: Ran, data: dict[str, Any]) -> None:
        """`data["tree"]`: the work tree id its caller has just staged, committed as is."""
        self.emit("step.finished", ran.step, ran.iteration, data)
        self.checkpoint(f"{ran.step} {ran.iteration} finished", data["tree"])

    def finish_build(self, ran: Ran) -> None:
        agent = ran.agent or parse_output(self.goal.build.format, ran.result.stdout_tail)
        usage = combine(ran.report, agent)
        after = self.walk_ignored()  # beside the scan below (new_ignored)
        # One scan: stage the build's change, list it, and take its tree from the index.
        rewritten = not self.wt.is_ancestor(ran.started)
        changed = [] if rewritten else self.wt.changed_paths(ran.started)
        tree = self.wt.work_tree_id() if rewritten else self.wt.staged_tree()
        unseen = self.new_ignored(after)  # hidden from git, there for the judge (trust.md)
        data = (
            ran.data()
            | spend_data(self.cell, usage, self.ctx.control.config.prices)
            | {
                "summary": fit_text(usage.summary, 4000),
                "agent_error": usage.error,
                "changed": changed[:MAX_LISTED_PATHS],
                "tree": tree,
            }
        )
        finished = (ran.step, ran.iteration, data)
        if self.made_repositories(ran.started, changed, after, finished):
            return
        if self.tampered(ran.started, changed + unseen, exclude_own=False, finished=finished):
            return
        if self.hid_own_files(ran.started, unseen, finished):
            return
        staged, leaks = self.held_back(ran.started, data)
        data |= self.destructive_data(ran.started, unseen, staged) | self.diff_data(ran)
        if usage.unavailable is not None and not leaks:
            self.finish_unavailable(ran, data, usage.unavailable)
            return
        self.finish(ran, data)
        if leaks:
            self.gate("parked_at_eyes", "secret_in_change", quarantine.detail(leaks))

    def held_back(self, base: str, data: dict[str, Any]) -> tuple[list[FileChange], list[str]]:
        """The build's staged change, parsed, whole: the destructive classes are found in all
        of it, the held-back files included, since an unpark lets those in as they are. The
        files that hold a secret are then moved to the goal's quarantine (loop/quarantine.py),
        so no commit ever holds them, and `data` says which (`result: secret`)."""
        from harness.trust.destructive.diff import parse_diff
        from harness.trust.destructive.textlike import staged_diff

        staged = parse_diff(staged_diff(self.wt, base))
        leaks = quarantine.secrets_in(staged, self.redactor)
        if not leaks:
            return staged, []
        held = quarantine.folder(self.ctx.control.repo.harness_dir(), self.goal.id)
        quarantine.hold_back(self.wt, base, quarantine.leak_paths(leaks), held)
        data |= {
            "result": "secret",
            "secrets": leaks[: quarantine.MAX_NAMED],
            "tree": self.wt.work_tree_id(),
        }
        return staged, leaks

    def diff_data(self, ran: Ran) -> dict[str, Any]:
        """The build's change without ledger/, bounded, for the reports (evidence.py)."""
        args = ["diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", ran.started]
        text = run_git([*args, "--", ".", ":!ledger"], self.wt.path).stdout
        rest = diff_command(self.goal.id, ran.iteration)
        return {"diff": fit_head(text.decode("utf-8", "replace"), DIFF_BYTES, rest)}

    def finish_unavailable(self, ran: Ran, data: dict[str, Any], message: str) -> None:
        """The model API failed: record it as such, and try again later or stop (loop.md).

        What the build changed stays in the worktree, as a cut-off build's does: it was
        checked like any build's change, and the next try continues from it."""
        halt = self.goal.halt
        tries = (self.cell.unavailable.count if self.cell.unavailable else 0) + 1
        data = data | {
            "result": "unavailable",
            "unavailable": message,
            "unavailable_try": tries,
            "unavailable_tries": halt.unavailable_tries,
        }
        if tries < halt.unavailable_tries:
            data["retry_at"] = later(self.ctx.clock.now(), halt.backoff_s(tries))
        self.emit("step.finished", ran.step, ran.iteration, data)
        if tries >= halt.unavailable_tries:
            self.gate("needs_attention", "agent_unavailable", unavailable_detail(tries, message))
        else:
            self.checkpoint(f"{ran.step} {ran.iteration} unavailable (try {tries})", data["tree"])

    def note_ignored(self, step: StepName) -> None:
        """Before a build: start listing the ignored entries already there (`new_ignored`)."""
        from harness.trust.destructive.textlike import IgnoredWalk

        self.ignored_before = IgnoredWalk(self.wt) if step == "build" else None

    def walk_ignored(self) -> IgnoredWalk | None:
        from harness.trust.destructive.textlike import IgnoredWalk

        return None if self.ignored_before is None else IgnoredWalk(self.wt)

    def new_ignored(self, after: IgnoredWalk | None) -> list[str]:
        """Files (not folders) the build added that ignore rules keep out of the diff."""
        before = self.ignored_before
        if before is None or after is None:
            return []
        return sorted(p for p in after.entries() - before.entries() if not p.endswith("/"))

    def made_repositories(
        self,
        base: str,
        changed: Sequence[str],
        after: IgnoredWalk | None,
        finished: tuple[StepName, int, dict[str, Any]],
    ) -> bool:
        """A build that left a repository of its own below the worktree (a `.git` folder or
        file): its configuration is the agent's, so it is removed unread, and the goal stops
        at tamper (store/nested.py)."""
        from harness.store.nested import nested_repositories

        before = self.ignored_before
        folders: set[str] = set()
        if before is not None and after is not None:
            folders = {p for p in after.entries() - before.entries() if p.endswith("/")}
        nested = nested_repositories(self.wt.path, changed, sorted(folders))
        if not nested:
            return False
        self.wt.restore_paths(base, nested)
        step, iteration, data = finished
        tamper = data | {"result": "tamper", "touched": nested[:MAX_LISTED_PATHS]}
        self.emit("step.finished", step, iteration, tamper | {"tree": self.wt.work_tree_id()})
        detail = (
            "made a git repository of its own inside the worktree (removed, never read): "
            + ", ".join(nested[:20])
        )
        self.gate("needs_attention", "tamper", detail)
        return True

    def destructive_data(
        self, base: str, unseen: Sequence[str] = (), staged: list[FileChange] | None = None
    ) -> dict[str, Any]:
        """What in this build's change falls in a destructive class (parks until unparked).
        `staged`: the staged change, already parsed."""
        from harness.trust.destructive.classify import classify_changes
        from harness.trust.destructive.contents import StagedContents
        from harness.trust.destructive.diff import parse_diff
        from harness.trust.destructive.hits import classes_of, owner_rules, split_enforced
        from harness.trust.destructive.summary import summarize
        from harness.trust.destructive.textlike import staged_diff, unseen_changes

        extra = self.ctx.control.config.destructive
        if staged is None:
            staged = parse_diff(staged_diff(self.wt, base))
        changes = staged + unseen_changes(self.wt, unseen)
        contents = StagedContents(self.wt, base)  # whole manifests and lockfiles, as staged
        hits, warned = split_enforced(classify_changes(changes, extra, contents), extra)
        # Hits of `enforce: warn` rules are evidence kept for the owners, never a gate.
        noted: dict[str, Any] = {
            "warned": [fit_text(h.describe(), 300) for h in warned[:MAX_WARNED]]
        }
        noted = (noted if warned else {}) | owner_rules(hits, warned)
        if not hits:
            return noted
        return noted | {
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
            self.checkpoint("ship finished")
        else:
            # Not the end: the goal waits for a new signed ship decision (loop.md).
            self.gate("needs_attention", "ship_failed", ship_failed_detail(ran.data()))

    def finish_read_only(self, ran: Ran, extra: dict[str, Any]) -> None:
        after = self.wt.work_tree_id()
        data = ran.data() | extra | {"tree": after}
        if after == ran.before:
            self.finish(ran, data)
            return
        before = ran.before or ""
        changed = self.wt.tree_changes(before, after)
        # Before the result is recorded: the step's writes are never committed, so a path
        # git-ignored afterwards (or a fixed command) lets the same step run again cleanly.
        self.wt.restore_paths(before, changed)
        violation = data | {"result": "violation", "changed": changed[:MAX_LISTED_PATHS]}
        self.emit("step.finished", ran.step, ran.iteration, violation)
        self.gate("needs_attention", "read_only_violation", violation_detail(ran.step, changed))

    def drop_untracked(self, rel: str) -> None:
        """The judge's JUnit file is a transient artifact unless the repository tracks it."""
        path = self.wt.path / rel
        tracked = self.wt.git("ls-files", "--", rel)
        if path.is_file() and not tracked:
            path.unlink()

    def tampered(
        self,
        base: str,
        changed: list[str],
        *,
        exclude_own: bool,
        finished: tuple[StepName, int, dict[str, Any]] | None = None,
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

    def hid_own_files(
        self, base: str, unseen: Sequence[str], finished: tuple[StepName, int, dict[str, Any]]
    ) -> bool:
        """A build whose new files an ignore rule it added hides (a `tests/conftest.py` the
        judge would run, behind a new `.gitignore` line): never staged, so never in the diff
        or the commit, yet there for the judge. Tamper, like hiding it in info/exclude.
        A cache that ignores itself (`.pytest_cache/`, a venv) is no such hide, unless
        what is in it changes what the judge or the review runs (docs/specs/trust.md)."""
        from harness.trust.destructive.textlike import hidden_by_new_rules, later_steps

        review = self.goal.review.run if self.goal.review else ()
        path_var = self.ctx.base_env.get("PATH")
        later = later_steps(self.wt.path, path_var, [*self.goal.judge.run, *review])
        hidden = hidden_by_new_rules(self.wt, base, unseen, later, self.ignored_before)
        if not hidden:
            return False
        step, iteration, data = finished
        touched = [entry.split(" (", 1)[0] for entry in hidden]
        tamper = data | {"result": "tamper", "touched": touched[:MAX_LISTED_PATHS]}
        self.emit("step.finished", step, iteration, tamper)
        detail = "hid new files with an ignore rule of its own: " + ", ".join(hidden[:20])
        self.gate("needs_attention", "tamper", detail)
        return True

    def settle_owed(self, last: Event | None) -> bool:
        """A recorded result whose consequence was never appended (killed between the two
        events): append it now, as the step's finish would have. The result is never re-run:
        a ship that passed completes, one that failed waits at ship_failed, a tamper or a
        read-only violation gates (its restore happened before the result was recorded)."""
        if last is None or last.type != "step.finished":
            return False
        data, iteration = last.data, last.iteration
        result = data.get("result")
        if last.step == "ship" and result == "pass":
            self.emit(
                "goal.completed", None, iteration, {"commit": self.wt.head(), "detail": "shipped"}
            )
        elif last.step == "ship" and result == "fail":
            self.gate("needs_attention", "ship_failed", ship_failed_detail(data))
            return True
        elif result == "tamper":
            touched = data.get("touched") or [p for p in data.get("changed", []) if is_protected(p)]
            self.gate("needs_attention", "tamper", "touched " + ", ".join(touched[:20]))
            return True
        elif result == "violation":
            detail = violation_detail(last.step or "", data.get("changed", []))
            self.gate("needs_attention", "read_only_violation", detail)
            return True
        elif result == "secret":
            self.gate("parked_at_eyes", "secret_in_change", quarantine.detail(data["secrets"]))
            return True
        else:
            return False
        self.checkpoint(f"{last.step} finished")
        return True


# How each step's finish is recorded.
FINISH: dict[StepName, Callable[[Finisher, Ran], None]] = {
    "plan": Finisher.finish_plan,
    "build": Finisher.finish_build,
    "judge": Finisher.finish_judge,
    "review": Finisher.finish_review,
    "ship": Finisher.finish_ship,
}
