"""Recording one goal: append an event, fold it into the cell, print it, and commit.

Every state change is an event. The recorder appends it, folds it into the cell and prints
its text line; at each step boundary (`checkpoint`) it writes the cell and the report and
commits, so a process killed anywhere finds a record that says where it was.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness import failpoints
from harness.loop.clock import Clock
from harness.record.cell import write_cell
from harness.record.events import EventType, GateReason, Status, StepName
from harness.record.fold import apply
from harness.record.hydrate import GoalPaths, Loaded
from harness.record.position import Position
from harness.record.render import text_line
from harness.store.fsutil import atomic_write
from harness.store.worktree import Worktree
from harness.trust.checkpoint import signed_checkpoint
from harness.trust.redact import NO_SECRETS, Redactor
from harness.trust.runnerkey import RunnerKey

if TYPE_CHECKING:
    from harness.loop.otel import GoalTrace

TEXT_FIELD_BYTES = 12_000


def call_id(goal_id: str, iteration: int, step: str) -> str:
    return hashlib.sha256(f"{goal_id}\0{iteration}\0{step}".encode()).hexdigest()[:16]


def fit_text(text: str | None, limit: int = TEXT_FIELD_BYTES) -> str | None:
    """Cut `text` from the front until its JSON form fits `limit` bytes, marking the cut."""
    if text is None or len(json.dumps(text, ensure_ascii=False).encode()) <= limit:
        return text
    keep = limit // 6
    return f"[… {len(text) - keep} characters cut]\n" + text[-keep:]


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
        redactor: Redactor = NO_SECRETS,
        publish: Callable[[], None] | None = None,
        signer: RunnerKey | None = None,
        trace: GoalTrace | None = None,
    ) -> None:
        self.goal_id, self.key, self.clock, self.print_line = goal_id, key, clock, print_line
        self.wt, self.paths = worktree, paths
        self.ledger, self.report = loaded.ledger, loaded.report
        self.cell = loaded.cell
        # Events after the cell (a crash before its write) may go with worktree changes
        # the cell does not name yet; until the next checkpoint only the head is compared.
        self.vouched = loaded.rolled_forward == 0
        # With a remote, `publish` pushes the goal branch at each checkpoint, and an event's
        # line waits until the push that carries it went: a run that loses the race to
        # another runner prints nothing that did not happen.
        self.publish = publish
        self.unpublished: list[str] = []
        # The work tree id a check has just staged and compared, with nothing run since:
        # the next checkpoint commits it without a second scan (None: scan again).
        self.fresh: str | None = None
        self.redactor = redactor  # the run's own (RunContext.redactor), else no secrets known
        self.signer = signer  # this runner's key: each checkpoint is signed with it
        # With live export (loop/otel.py), the spans of ended steps go with the printed lines.
        self.trace = trace

    def emit(
        self, type: EventType, step: StepName | None, iteration: int, data: Mapping[str, Any]
    ) -> None:
        # Before the chain: the record, its replay and every line made from it hold only
        # receipts of secrets (trust/redact.py), so verify and replay stay byte-identical.
        data = self.redactor.data(data)
        record = self.ledger.append(type, step, iteration, data, self.clock.now())
        failpoints.hit("after_append")
        position = Position(record.event.seq, record.hash)
        self.cell = apply(self.cell, record.event, position)
        self.report.add(record.event)
        if self.trace is not None:
            self.trace.add(record)
        if self.publish is None:
            self.print_line(text_line(record.event))
            self._release_spans()
        else:
            self.unpublished.append(text_line(record.event))

    def checkpoint(self, message: str, tree: str | None = None) -> str:
        """Write the cell and the report and commit. `tree`: the work tree id the caller
        has just staged and recorded (nothing ran since); else the worktree is scanned.
        Either way the commit holds exactly that tree plus the goal's record, which is
        all the harness wrote since (performance.md, "Scale")."""
        # The cell names the tree this commit holds: what runs or ships next must equal it.
        tree = self.fresh if tree is None else tree
        self.fresh = None
        self.cell = replace(self.cell, tree=self.wt.work_tree_id() if tree is None else tree)
        self.vouched = True
        self.seal()
        failpoints.hit("after_cell_write")
        atomic_write(self.paths.report, self.report.render(self.cell).encode())
        failpoints.hit("before_commit")
        commit = self.wt.commit(f"harness({self.goal_id}): {message}", [self.paths.rel])
        failpoints.hit("after_commit")
        if self.publish is not None:
            self.publish()  # Busy (another runner won): the lines stay unprinted
            self.flush_lines()
        return commit

    def seal(self) -> None:
        """Write the cell, and this runner's signature over it and the ledger head
        (trust/checkpoint.py); without a runner key, a signature of an older head goes."""
        data = write_cell(self.paths.cell, self.cell, self.key)
        if self.signer is None:
            self.paths.checkpoint.unlink(missing_ok=True)
            return
        assert self.cell.tree is not None  # a checkpoint always names its tree
        signed = signed_checkpoint(
            self.signer, self.goal_id, self.cell.position, data, self.cell.tree
        )
        atomic_write(self.paths.checkpoint, signed)

    def flush_lines(self) -> None:
        """Print the lines of events recorded since the last push (the run ends here)."""
        lines, self.unpublished = self.unpublished, []
        for line in lines:
            self.print_line(line)
        self._release_spans()

    def drop_unpublished_lines(self) -> None:
        """The run lost the goal to another runner: its unpushed events are dropped too,
        and so are the spans they ended."""
        self.unpublished.clear()
        if self.trace is not None:
            self.trace.drop()

    def _release_spans(self) -> None:
        if self.trace is not None:
            self.trace.release()

    def gate(
        self, status: Status, reason: GateReason, detail: str, more: Mapping[str, str] = {}
    ) -> None:
        """`more`: what only some gates record (the ship gate's `change`)."""
        self.emit(
            "goal.gated",
            None,
            self.cell.iteration,
            {
                "status": status,
                "reason": reason,
                "detail": fit_text(detail, 4000),
                "commit": self.wt.head(),
                **more,
            },
        )
        self.checkpoint(f"{status} ({reason})")
