"""How a build ended: what it spent and changed, once its change is found to be the goal's.

Before the build's `step.finished` is recorded its change is checked: no repository of its
own, no protected path or rewritten history, no new file hidden by an ignore rule of its
own, no secret (those files are held back); then its destructive classes and its diff are
recorded with it. The read-only steps' finishes are in `finish`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.loop import quarantine
from harness.loop.agents import combine, parse_output
from harness.loop.clock import later
from harness.loop.context import RunContext
from harness.loop.finish import MAX_LISTED_PATHS, Ran, finish, tampered, unavailable_detail
from harness.loop.recorder import Recorder, fit_text
from harness.loop.spend import spend_data
from harness.loop.unrunnable import UNRUNNABLE_CODES, Program, unrunnable_detail
from harness.model.goal import Goal
from harness.record.events import StepName
from harness.record.evidence import DIFF_BYTES, diff_command, fit_head
from harness.store.gitrepo import run_git
from harness.store.worktree import Worktree

if TYPE_CHECKING:
    from harness.loop.execute import StepCommands
    from harness.trust.destructive.diff import FileChange
    from harness.trust.destructive.textlike import IgnoredWalk

MAX_WARNED = 50  # warned hits kept per build: evidence for the owners, bounded


def ignored_walk(step: StepName, wt: Worktree) -> IgnoredWalk | None:
    """Before a build: start listing the ignored entries already there (`new_ignored`)."""
    from harness.trust.destructive.textlike import IgnoredWalk

    return IgnoredWalk(wt) if step == "build" else None


def walk_ignored(before: IgnoredWalk | None, wt: Worktree) -> IgnoredWalk | None:
    from harness.trust.destructive.textlike import IgnoredWalk

    return None if before is None else IgnoredWalk(wt)


def new_ignored(before: IgnoredWalk | None, after: IgnoredWalk | None) -> list[str]:
    """Files (not folders) the build added that ignore rules keep out of the diff."""
    if before is None or after is None:
        return []
    return sorted(p for p in after.entries() - before.entries() if not p.endswith("/"))


class BuildFinish:
    """Records how a goal's builds end: through its recorder, by its goal file's rules and
    the run's configuration (`ctx`)."""

    def __init__(self, rec: Recorder, goal: Goal, ctx: RunContext, commands: StepCommands) -> None:
        self.rec, self.goal, self.ctx = rec, goal, ctx
        self.commands = commands  # how its steps run: the sandbox and what it shows

    def __call__(self, ran: Ran) -> None:
        rec, wt = self.rec, self.rec.wt
        agent = ran.agent or parse_output(self.goal.build.format, ran.result.stdout_tail)
        usage = combine(ran.report, agent)
        after = walk_ignored(ran.ignored_before, wt)  # beside the scan below (new_ignored)
        # One scan: stage the build's change, list it, and take its tree from the index.
        rewritten = not wt.is_ancestor(ran.started)
        changed = [] if rewritten else wt.changed_paths(ran.started)
        tree = wt.work_tree_id() if rewritten else wt.staged_tree()
        # Hidden from git, there for the judge (trust.md).
        unseen = new_ignored(ran.ignored_before, after)
        data = (
            ran.data()
            | spend_data(rec.cell, usage, self.ctx.control.config.prices)
            | {
                "summary": fit_text(usage.summary, 4000),
                "agent_error": usage.error,
                "changed": changed[:MAX_LISTED_PATHS],
                "tree": tree,
            }
        )
        finished = (ran.step, ran.iteration, data)
        if self.made_repositories(ran, changed, after, finished):
            return
        if tampered(rec, ran.started, changed + unseen, exclude_own=False, finished=finished):
            return
        if self.hid_own_files(ran, unseen, finished):
            return
        staged, leaks = self.held_back(ran.started, data)
        data |= self.destructive_data(ran.started, unseen, staged) | self.diff_data(ran)
        if usage.unavailable is not None and not leaks:
            self.finish_unavailable(ran, data, usage.unavailable)
            return
        if ran.result.exit_code in UNRUNNABLE_CODES and not leaks:
            self.finish_unrunnable(ran, data)
            return
        finish(rec, ran, data)
        if leaks:
            rec.gate("parked_at_eyes", "secret_in_change", quarantine.detail(leaks))

    def held_back(self, base: str, data: dict[str, Any]) -> tuple[list[FileChange], list[str]]:
        """The build's staged change, parsed, whole: the destructive classes are found in all
        of it, the held-back files included, since an unpark lets those in as they are. The
        files that hold a secret are then moved to the goal's quarantine (loop/quarantine.py),
        so no commit ever holds them, and `data` says which (`result: secret`)."""
        from harness.trust.destructive.diff import parse_diff
        from harness.trust.destructive.textlike import staged_diff

        wt = self.rec.wt
        staged = parse_diff(staged_diff(wt, base))
        leaks = quarantine.secrets_in(staged, self.rec.redactor)
        if not leaks:
            return staged, []
        held = quarantine.folder(self.ctx.control.repo.harness_dir(), self.goal.id)
        quarantine.hold_back(wt, base, quarantine.leak_paths(leaks), held)
        data |= {
            "result": "secret",
            "secrets": leaks[: quarantine.MAX_NAMED],
            "tree": wt.work_tree_id(),
        }
        return staged, leaks

    def diff_data(self, ran: Ran) -> dict[str, Any]:
        """The build's change without ledger/, bounded, for the reports (evidence.py)."""
        args = ["diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", ran.started]
        text = run_git([*args, "--", ".", ":!ledger"], self.rec.wt.path).stdout
        rest = diff_command(self.goal.id, ran.iteration)
        return {"diff": fit_head(text.decode("utf-8", "replace"), DIFF_BYTES, rest)}

    def finish_unavailable(self, ran: Ran, data: dict[str, Any], message: str) -> None:
        """The model API failed: record it as such, and try again later or stop (loop.md).

        What the build changed stays in the worktree, as a cut-off build's does: it was
        checked like any build's change, and the next try continues from it."""
        rec, halt = self.rec, self.goal.halt
        tries = (rec.cell.unavailable.count if rec.cell.unavailable else 0) + 1
        data = data | {
            "result": "unavailable",
            "unavailable": message,
            "unavailable_try": tries,
            "unavailable_tries": halt.unavailable_tries,
        }
        if tries < halt.unavailable_tries:
            data["retry_at"] = later(self.ctx.clock.now(), halt.backoff_s(tries))
        rec.emit("step.finished", ran.step, ran.iteration, data)
        if tries >= halt.unavailable_tries:
            rec.gate("needs_attention", "agent_unavailable", unavailable_detail(tries, message))
        else:
            rec.checkpoint(f"{ran.step} {ran.iteration} unavailable (try {tries})", data["tree"])

    def finish_unrunnable(self, ran: Ran, data: dict[str, Any]) -> None:
        """The build's command could not run (exit 127 or 126): its agent never ran, so no
        judge runs and the round is not counted; the goal stops at agent_unavailable at
        once, naming the program (loop.md, "A missing agent"). What it changed stays, as an
        unavailable build's does."""
        build, code = self.goal.build, ran.result.exit_code
        assert code is not None
        commands, wt = self.commands, self.rec.wt
        program = Program.find(
            build.run, wt.path, self.ctx.base_env, commands.sandbox, commands.place(), build.network
        )
        detail = unrunnable_detail(program, code, ran.result.output_tail, self.goal.id)
        data = data | {"result": "unrunnable", "unrunnable": fit_text(detail, 4000)}
        self.rec.emit("step.finished", ran.step, ran.iteration, data)
        self.rec.gate("needs_attention", "agent_unavailable", detail)

    def made_repositories(
        self,
        ran: Ran,
        changed: Sequence[str],
        after: IgnoredWalk | None,
        finished: tuple[StepName, int, dict[str, Any]],
    ) -> bool:
        """A build that left a repository of its own below the worktree (a `.git` folder or
        file): its configuration is the agent's, so it is removed unread, and the goal stops
        at tamper (store/nested.py)."""
        from harness.store.nested import nested_repositories

        rec, wt, before = self.rec, self.rec.wt, ran.ignored_before
        folders: set[str] = set()
        if before is not None and after is not None:
            folders = {p for p in after.entries() - before.entries() if p.endswith("/")}
        nested = nested_repositories(wt.path, changed, sorted(folders))
        if not nested:
            return False
        wt.restore_paths(ran.started, nested)
        step, iteration, data = finished
        tamper = data | {"result": "tamper", "touched": nested[:MAX_LISTED_PATHS]}
        rec.emit("step.finished", step, iteration, tamper | {"tree": wt.work_tree_id()})
        detail = (
            "made a git repository of its own inside the worktree (removed, never read): "
            + ", ".join(nested[:20])
        )
        rec.gate("needs_attention", "tamper", detail)
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

        wt, extra = self.rec.wt, self.ctx.control.config.destructive
        if staged is None:
            staged = parse_diff(staged_diff(wt, base))
        changes = staged + unseen_changes(wt, unseen)
        contents = StagedContents(wt, base)  # whole manifests and lockfiles, as staged
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

    def hid_own_files(
        self, ran: Ran, unseen: Sequence[str], finished: tuple[StepName, int, dict[str, Any]]
    ) -> bool:
        """A build whose new files an ignore rule it added hides (a `tests/conftest.py` the
        judge would run, behind a new `.gitignore` line): never staged, so never in the diff
        or the commit, yet there for the judge. Tamper, like hiding it in info/exclude.
        A cache that ignores itself (`.pytest_cache/`, a venv) is no such hide, unless
        what is in it changes what the judge or the review runs (docs/specs/trust.md)."""
        from harness.trust.destructive.textlike import hidden_by_new_rules, later_steps

        rec, wt = self.rec, self.rec.wt
        review = self.goal.review.run if self.goal.review else ()
        path_var = self.ctx.base_env.get("PATH")
        later = later_steps(wt.path, path_var, [*self.goal.judge.run, *review])
        hidden = hidden_by_new_rules(wt, ran.started, unseen, later, ran.ignored_before)
        if not hidden:
            return False
        step, iteration, data = finished
        touched = [entry.split(" (", 1)[0] for entry in hidden]
        tamper = data | {"result": "tamper", "touched": touched[:MAX_LISTED_PATHS]}
        rec.emit("step.finished", step, iteration, tamper)
        detail = "hid new files with an ignore rule of its own: " + ", ".join(hidden[:20])
        rec.gate("needs_attention", "tamper", detail)
        return True
