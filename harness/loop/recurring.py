"""A recurring goal's next run (`every:`): when it is due, how it starts, how a kill while
it starts is finished (docs/specs/loop.md, "Recurring goals"). When is the schedule's
(record/schedule.py): anchored times, each an interval after the one before.

Run N ≥ 2 begins with `run.started`; its checkpoint makes the goal branch's next commit from
the control branch's head at that moment (today's code, not the last run's goal branch):
tree = the control commit's tree with `ledger/<id>` taken from the goal branch, parent = the
goal branch head (the branch only moves forward). The worktree is then reset to it.

A kill anywhere in that is finished by the next run from the record alone: `run.started`
is the last event until the run's first step starts, and its data names the control commit,
so the same tree is made again (`finish_run_start`).
"""

from __future__ import annotations

from harness import failpoints
from harness.loop.recorder import Recorder
from harness.record.events import TERMINAL
from harness.record.fold import replace
from harness.record.ledger import Event
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import HARNESS_EMAIL, HARNESS_NAME, installed_git, run_git
from harness.store.gitversion import needs_ref_fsync
from harness.store.worktree import Worktree

HARNESS_IDENT = ("-c", f"user.name={HARNESS_NAME}", "-c", f"user.email={HARNESS_EMAIL}")


def start_next_run(rec: Recorder, control: str) -> None:
    """Start the next run of a goal whose run has ended, if it is due and may start: its
    goal version is approved (the caller has checked) and still recurring, and no lifetime
    cap is reached (else the goal stops at `needs_attention` / `lifetime_exhausted`).
    `control`: the control commit the run would start from."""
    cell = rec.cell
    if cell.status not in TERMINAL:
        return
    now = rec.clock.now()  # read only between runs (one reading: due, and what it stands for)
    if not cell.run_due(now):
        return
    if cell.lifetime_hits(starting=True):
        rec.gate("needs_attention", "lifetime_exhausted", cell.lifetime_text(starting=True))
        return
    # The anchored time this run stands for: after a runner was away for several intervals,
    # the last one it reached, so it runs once and the next is due after now (schedule.py).
    data = {"run": cell.run + 1, "control_commit": control, "due_at": cell.run_slot(now)}
    rec.emit("run.started", None, 1, data)
    commit_run_start(rec, control)


def commit_run_start(rec: Recorder, control: str) -> None:
    """The checkpoint of `run.started`: cell and report, the new run's commit, the reset."""
    wt, paths = rec.wt, rec.paths
    rec.cell = replace(rec.cell, tree=wt.tree_without(control))
    rec.fresh, rec.vouched = None, True
    rec.seal()
    failpoints.hit("run_cell_written")
    atomic_write(paths.report, rec.report.render(rec.cell).encode())
    failpoints.hit("run_before_commit")
    message = f"harness({rec.goal_id}): run {rec.cell.run} started from {control[:12]}"
    commit = _commit_onto(wt, control, paths.rel, message)
    failpoints.hit("run_before_reset")
    _reset(wt, commit)
    failpoints.hit("run_after_reset")
    if rec.publish is not None:
        rec.publish()
        rec.flush_lines()


def finish_run_start(rec: Recorder, last: Event | None, unsettled: bool) -> bool:
    """A run killed while it started run N: its `run.started` is the last event. Without
    the new run's commit (`unsettled`: the cell is not written, or not committed) the same
    commit is made again, on a branch head that must be the harness's own; with it, the
    worktree (perhaps reset half-way) is reset to it. What the worktree then holds is the
    committed tree, which `bound()` compares with the MAC'd cell before anything runs.
    False when the branch head is not the harness's own (the goal stops at tamper)."""
    if last is None or last.type != "run.started":
        return True
    if unsettled:
        from harness.loop.binding import unbound

        # Only the head: the worktree is the last run's and is about to be replaced.
        problem, _ = unbound(rec.wt, rec.paths, rec.key, rec.cell, False)
        if problem is not None:
            rec.gate("needs_attention", "tamper", problem)
            return False
        commit_run_start(rec, last.data["control_commit"])
    else:
        _reset(rec.wt, rec.wt.head())
    return True


def _commit_onto(wt: Worktree, control: str, keep: str, message: str) -> str:
    """Commit `control`'s tree with the folder `keep` (`ledger/<id>`) as the worktree holds
    it, on top of the branch head; returns the commit. Built with `mktree` from the two
    trees, so neither the index's other entries nor the worktree's other files are read."""
    top, name = keep.split("/", 1)
    wt.stage_paths([keep])
    staged = wt.write_tree()
    kept = wt.git("rev-parse", f"{staged}:{keep}")
    inner = [*_entries(wt, f"{control}:{top}", name), _row(kept, name)]
    tree = _mktree(wt, [*_entries(wt, control, top), _row(_mktree(wt, inner), top)])
    head = wt.head()
    made = run_git(
        [*HARNESS_IDENT, "commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", message], wt.path
    )
    commit = made.stdout.decode().strip()
    run_git(["update-ref", "-m", f"commit: {message}", "HEAD", commit, head], wt.path)
    if needs_ref_fsync(installed_git()):
        wt.fsync_branch()
    return commit


def _row(tree: str, name: str) -> bytes:
    return f"040000 tree {tree}\t{name}".encode()


def _entries(wt: Worktree, treeish: str, drop: str) -> list[bytes]:
    """`ls-tree` rows of `treeish` (none when it does not exist) without the entry `drop`."""
    listing = run_git(["ls-tree", "-z", treeish], wt.path, check=False)
    if listing.returncode != 0:
        return []
    rows = [row for row in listing.stdout.split(b"\0") if row]
    return [row for row in rows if row.split(b"\t", 1)[1] != drop.encode()]


def _mktree(wt: Worktree, rows: list[bytes]) -> str:
    made = run_git(["mktree", "-z"], wt.path, input=b"".join(r + b"\0" for r in rows))
    return made.stdout.decode().strip()


def _reset(wt: Worktree, commit: str) -> None:
    """The worktree and index become `commit`: files of the last run that the control tree
    lacks are removed (git knows them from the index, which still holds the last run's)."""
    wt.clear_stale_index_lock()
    wt.git("reset", "-q", "--hard", commit)
