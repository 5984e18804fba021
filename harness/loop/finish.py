"""How a step ended: its `step.finished` event, and the gate a tamper or violation stops at.

A read-only step's finish (plan, judge, review) checks that it left the tree alone; the
ship step's completes the goal or waits for a new decision; a build's, which checks much
more, is `buildfinish.BuildFinish`. Each is a function of the goal's `Recorder` and what
else it reads; `controller.finishers` is the table that picks one per step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.loop import quarantine
from harness.loop.agents import Usage
from harness.loop.egress import park_on_denied
from harness.loop.guards import is_protected
from harness.loop.judge import first_failing_test, junit_counts
from harness.loop.recorder import Recorder, fit_text
from harness.loop.steps import StepResult
from harness.model.limits import Halt
from harness.record.cell import write_cell
from harness.record.events import StepName
from harness.record.ledger import Event
from harness.store.worktree import Worktree

if TYPE_CHECKING:
    from harness.trust.destructive.textlike import IgnoredWalk

MAX_LISTED_PATHS = 200
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
    every = tail.split("\n")
    lines = every[-SHIP_TAIL_LINES:]
    # git's first error line says why; later ones often only repeat "failed to push".
    first = next((text for text in every if text.startswith(("fatal:", "error:"))), None)
    if first is not None and first not in lines:
        lines = [first, "…", *lines]
    return f"the ship step {how}" + (": " + "\n".join(lines) if tail else " (no output)")


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
    # A build's walk of the ignored entries there before it ran (`buildfinish.new_ignored`).
    ignored_before: IgnoredWalk | None = None
    # The egress proxy's record (`egress`, `egress_more`, `egress_error`) of a step whose goal
    # names an allowlist; None for every other step.
    egress: Mapping[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.result.exit_code == 0 and not self.result.timed_out

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    def data(self) -> dict[str, Any]:
        result = self.result
        return (
            {
                "call_id": self.cid,
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "duration_s": round(result.duration_s, 3),
                "output_tail": fit_text(result.output_tail),
            }
            | ({"signal": result.signal} if result.signal else {})
            | dict(self.egress or {})
        )


def finish(rec: Recorder, ran: Ran, data: dict[str, Any]) -> None:
    """`data["tree"]`: the work tree id its caller has just staged, committed as is."""
    rec.emit("step.finished", ran.step, ran.iteration, data)
    rec.checkpoint(f"{ran.step} {ran.iteration} finished", data["tree"])


def finish_judge(rec: Recorder, ran: Ran, junit: str | None) -> None:
    """`junit`: the goal's `judge.junit`, the test report the judge writes."""
    failing = None
    junit_path = rec.wt.path / junit if junit else None
    if not ran.passed:
        failing = first_failing_test(ran.result.output_tail, junit_path)
    extra: dict[str, Any] = {"result": ran.verdict, "failing_test": failing}
    counts = junit_counts(junit_path) if junit_path is not None else None
    if counts is not None:  # what the attestation's test-result says (attest.md)
        extra["junit"] = counts
    if junit:
        drop_untracked(rec.wt, junit)
    finish_read_only(rec, ran, extra)


def finish_review(rec: Recorder, ran: Ran) -> None:
    stdout = fit_text(ran.result.stdout_tail)
    finish_read_only(rec, ran, {"result": ran.verdict, "stdout_tail": stdout})


def finish_plan(rec: Recorder, ran: Ran) -> None:
    finish_review(rec, ran)  # the same record: its stdout goes into the first prompt


def finish_ship(
    rec: Recorder,
    ran: Ran,
    hint: Callable[[], str] | None = None,
    attestation: Mapping[str, str] | None = None,
) -> None:
    """`hint`: what else a failed ship's detail says (shipremote.sandbox_hint);
    `attestation`: the bundle the step was given, or why none (`execute.attest`)."""
    data = ran.data() | {"result": ran.verdict} | dict(attestation or {})
    rec.emit("step.finished", ran.step, ran.iteration, data)
    if ran.passed:
        data = {"commit": rec.wt.head(), "detail": "shipped"}
        rec.emit("goal.completed", None, ran.iteration, data)
        rec.checkpoint("ship finished")
    else:
        # Not the end: the goal waits for a new signed ship decision (loop.md).
        said = hint() if hint is not None else ""
        detail = ship_failed_detail(ran.data())
        rec.gate("needs_attention", "ship_failed", f"{detail}\n{said}" if said else detail)


def finish_read_only(rec: Recorder, ran: Ran, extra: dict[str, Any]) -> None:
    wt = rec.wt
    after = wt.work_tree_id()
    data = ran.data() | extra | {"tree": after}
    if after == ran.before:
        finish(rec, ran, data)
        return
    before = ran.before or ""
    changed = wt.tree_changes(before, after)
    # Before the result is recorded: the step's writes are never committed, so a path
    # git-ignored afterwards (or a fixed command) lets the same step run again cleanly.
    wt.restore_paths(before, changed)
    violation = data | {"result": "violation", "changed": changed[:MAX_LISTED_PATHS]}
    rec.emit("step.finished", ran.step, ran.iteration, violation)
    rec.gate("needs_attention", "read_only_violation", violation_detail(ran.step, changed))


def drop_untracked(wt: Worktree, rel: str) -> None:
    """The judge's JUnit file is a transient artifact unless the repository tracks it."""
    path = wt.path / rel
    tracked = wt.git("ls-files", "--", rel)
    if path.is_file() and not tracked:
        path.unlink()


def tampered(
    rec: Recorder,
    base: str,
    changed: list[str],
    *,
    exclude_own: bool,
    finished: tuple[StepName, int, dict[str, Any]] | None = None,
) -> bool:
    """A step that touched a protected path: restore them, record, stop at tamper."""
    wt = rec.wt
    rewritten = not wt.is_ancestor(base)
    own = rec.paths.rel + "/"
    hits = [p for p in changed if is_protected(p) and not (exclude_own and p.startswith(own))]
    if not hits and not rewritten:
        return False
    if rewritten:
        wt.git("reset", "-q", "--soft", base)
        hits = [p for p in wt.changed_paths(base) if is_protected(p)]
    wt.restore_paths(base, hits)
    # Our own files come back from memory: the in-memory cell and report are authoritative.
    write_cell(rec.paths.cell, rec.cell, rec.key)
    if finished is not None:
        step, iteration, data = finished
        rec.emit(
            "step.finished",
            step,
            iteration,
            data | {"result": "tamper", "tree": wt.work_tree_id()},
        )
    detail = ("history rewritten; " if rewritten else "") + "touched " + ", ".join(hits[:20])
    rec.gate("needs_attention", "tamper", detail)
    return True


def settle_owed(rec: Recorder, last: Event | None, halt: Halt | None = None) -> bool:
    """A recorded result whose consequence was never appended (killed between the two
    events): append it now, as the step's finish would have. The result is never re-run:
    a ship that passed completes, one that failed waits at ship_failed, a tamper or a
    read-only violation gates (its restore happened before the result was recorded), so
    does a build whose command could not run, and a step denied a connection when the
    goal's `halt` parks on that (`egress.park_on_denied`)."""
    if last is None or last.type != "step.finished":
        return False
    data, iteration = last.data, last.iteration
    result = data.get("result")
    if last.step == "ship" and result == "pass":
        rec.emit("goal.completed", None, iteration, {"commit": rec.wt.head(), "detail": "shipped"})
    elif last.step == "ship" and result == "fail":
        rec.gate("needs_attention", "ship_failed", ship_failed_detail(data))
        return True
    elif result == "tamper":
        touched = data.get("touched") or [p for p in data.get("changed", []) if is_protected(p)]
        rec.gate("needs_attention", "tamper", "touched " + ", ".join(touched[:20]))
        return True
    elif result == "violation":
        detail = violation_detail(last.step or "", data.get("changed", []))
        rec.gate("needs_attention", "read_only_violation", detail)
        return True
    elif result == "secret":
        rec.gate("parked_at_eyes", "secret_in_change", quarantine.detail(data["secrets"]))
        return True
    elif result == "unrunnable":
        detail = data.get("unrunnable") or f"build.run exited {data.get('exit_code')}"
        rec.gate("needs_attention", "agent_unavailable", detail)
        return True
    else:
        return halt is not None and park_on_denied(rec, halt, last.step or "", iteration, data)
    rec.checkpoint(f"{last.step} finished")
    return True
