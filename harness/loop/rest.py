"""When a goal rests: nothing a run could do moves it. One predicate (`rests`) for both
paths that ask: `harness run`'s shortcut (`at_rest`), which answers for a goal from its
attested cell without loading it, and the full path (`advance._move_on`), which asks after
everything is loaded and verified.

A goal rests when it has finished (a recurring goal's next run not due), or when it waits
at a gate with its goal file and owners as recorded and no decision record naming its
exact state. Only the cheap facts are read here (the cell, two hashes, the approval
records' statements), so this module stays light: a run whose goals all rest imports
neither the controller nor the goal file's parser (loop.md, "The resting path").
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import Busy, TrustFailure
from harness.loop.control import Control
from harness.record.cell import Cell, parse_cell
from harness.record.events import TERMINAL, WAITING
from harness.record.ledger import open_segment
from harness.store.gitrepo import GitError, Repo
from harness.trust.approvals import SignedRecord
from harness.trust.checkpoint import FILE_NAME, signed_by_one_of
from harness.trust.decisions import bound_to
from harness.trust.runnerkey import RunnerKey
from harness.trust.secret import Secret

if TYPE_CHECKING:
    from harness.store.remote import Remote


def rests(
    goal_id: str,
    cell: Cell,
    now: Callable[[], str],
    goal_sha256: str,
    owners_sha256: str,
    records: Iterable[SignedRecord],
) -> bool:
    """Whether nothing can move the goal now: finished (a recurring goal's next run not
    due; `now` is asked only then), or waiting at a gate with the goal file (`goal_sha256`)
    and the owners as the cell recorded them and no record in `records` bound to its exact
    state."""
    if cell.status in TERMINAL:
        return not cell.run_due(now())
    if cell.status not in WAITING:
        return False
    if not as_recorded(cell, goal_sha256, owners_sha256):
        return False
    return not any(bound_to(record, goal_id, cell) for record in records)


def as_recorded(cell: Cell, goal_sha256: str, owners_sha256: str) -> bool:
    """Whether the goal file and the owners are those the cell was recorded under."""
    return cell.goal_sha256 == goal_sha256 and cell.owners_sha256 == owners_sha256


def control_rests(control: Control, goal_id: str, cell: Cell, now: str) -> bool:
    """`rests`, with the goal file, owners and decision records as the control ref holds them."""
    if cell.status in TERMINAL:  # no goal file read for a goal whose run is not due
        return not cell.run_due(now)
    goal_sha256 = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest()
    return rests(
        goal_id, cell, lambda: now, goal_sha256, control.owners_sha256, control.approvals(goal_id)
    )


def at_rest(
    repo: Repo, control: Control, secret: Secret, remote: Remote | None, goal_id: str, now: str
) -> Cell | None:
    """The goal's cell when this run has nothing to do for it, else None (the full path).
    With `--push` the branch may have moved on the remote: the resting answer holds when the
    local branch is where the remote's was fetched (nothing to sync), or when the remote's
    commit rests and the local branch only has to catch up to it."""
    if remote is None or remote.in_step(control.branch(goal_id), control.objects):
        return resting(repo, control, secret, goal_id, now)
    return caught_up(repo, control, secret, remote, goal_id, now)


def resting(repo: Repo, control: Control, secret: Secret, goal_id: str, now: str) -> Cell | None:
    """The goal's cell when it rests, read without loading the goal.

    Such a goal needs no ledger scan, no goal parsing and no git process of its own (the
    Control's `cat-file` reads its file and approvals). The cell is the worktree's when it
    holds the committed bytes and its ledger ends whole; with no worktree in this clone, the
    goal branch's committed one. Anything else (or a cell that does not verify) takes the
    full path, which checks everything and refuses what it must.
    """
    worktree = repo.worktree_path(goal_id)
    committed = f"refs/heads/{control.branch(goal_id)}"
    if not worktree.exists():
        cell = committed_cell(control, secret, goal_id, committed)
        return cell if cell is not None and control_rests(control, goal_id, cell, now) else None
    path = worktree / "ledger" / goal_id / "state.json"
    try:
        data = path.read_bytes()
        cell = parse_cell(data, str(path), goal_id, secret.goal_key(goal_id))
    except (OSError, TrustFailure):
        return None
    if not ends_whole(path.parent / "events"):
        return None  # a torn tail, an empty or odd segment: the full path deals with it
    try:
        if control.objects.blob(f"{committed}:ledger/{goal_id}/state.json") != data:
            return None  # written but not committed (killed before the checkpoint's commit)
    except GitError:
        return None  # an unreadable object: the full path names it and refuses
    return cell if control_rests(control, goal_id, cell, now) else None


def caught_up(
    repo: Repo, control: Control, secret: Secret, remote: Remote, goal_id: str, now: str
) -> Cell | None:
    """With `--push`, a goal another clone brought to rest (`rests`), or whose step another
    clone runs under a live lease, while this clone's branch stayed behind: the branch (and
    its worktree, where this clone has one) is brought to the remote's commit as the sync
    would, and the goal answered for without loading it: its cell, or busy (remote.md, item
    3). A branch that is ahead, diverged or went back takes the full path, and so does
    anything this check cannot read."""
    branch = control.branch(goal_id)
    remote.refresh(branch)  # after a lost race, as the sync would (remote.md, item 3)
    if branch in remote.rewound:
        return None
    try:
        theirs = control.objects.commit_id(remote.tracking(branch))
        ours = control.objects.commit_id(f"refs/heads/{branch}")
    except GitError:
        return None
    if theirs is None:
        return None
    cell = committed_cell(control, secret, goal_id, theirs)
    if cell is None:
        return None
    held = _held_elsewhere(repo, control, goal_id, cell, now)
    if not held and not control_rests(control, goal_id, cell, now):
        return None
    if ours is not None and not repo.is_ancestor(ours, theirs):
        return None  # ahead or diverged: the sync pushes, or finds who won
    worktree = repo.worktree_path(goal_id)
    if worktree.exists():
        # As the full path does before its sync: a killed run's step processes are ended
        # and a half-made worktree removed before the worktree is touched.
        from harness.loop.guards import ChildRecord

        ChildRecord(repo.harness_dir() / "locks", goal_id).end_leftover()
        repo.repair_worktree(worktree)
    if not remote.catch_up(branch, worktree, ours, theirs):
        return None
    if held:
        assert cell.in_flight is not None
        raise Busy(f"goal {goal_id}: {cell.in_flight.holder_text()}")
    return cell


def _held_elsewhere(repo: Repo, control: Control, goal_id: str, cell: Cell, now: str) -> bool:
    """Whether another clone runs the goal's step under a live lease, with the goal file
    and owners as it started (a change there is the full path's to gate)."""
    from harness.store.remote import runner_id

    flight = cell.in_flight
    if (
        cell.status != "running"
        or flight is None
        or not flight.held_elsewhere(runner_id(repo), lambda: now)
    ):
        return False
    goal_sha256 = hashlib.sha256(control.goal_bytes(goal_id)).hexdigest()
    return as_recorded(cell, goal_sha256, control.owners_sha256)


def committed_cell(control: Control, secret: Secret, goal_id: str, rev: str) -> Cell | None:
    """The goal's cell as committed at `rev`, its MAC checked; None when absent, unreadable
    or not verifying (the full path then names what is wrong)."""
    source = f"{rev}:ledger/{goal_id}/state.json"
    try:
        data = control.objects.blob(source)
        if data is None:
            return None
        return parse_cell(data, source, goal_id, secret.goal_key(goal_id))
    except (GitError, TrustFailure):
        return None


def ends_whole(events: Path) -> bool:
    """Whether the last segment ends with a whole line: one byte read, through the ledger's
    own opener (a planted link is not followed). An empty segment, a link or anything
    unreadable is not whole here: the full path cuts it back or names it and refuses."""
    segments = sorted(events.glob("*.jsonl"))
    if not segments:
        return False
    try:
        fd = open_segment(segments[-1])
    except (OSError, TrustFailure):
        return False
    try:
        size = os.fstat(fd).st_size
        return size > 0 and os.pread(fd, 1, size - 1) == b"\n"
    except OSError:  # e.g. a folder named like a segment
        return False
    finally:
        os.close(fd)


def unsigned(repo: Repo, control: Control, goal_id: str, key: RunnerKey | None) -> bool:
    """Whether this runner must sign a resting goal's head (`advance` does, with a
    checkpoint): the owners list runners, this machine has a key, and no listed runner's
    key signed the record as it stands (made before the owners listed runners, or by a
    runner since removed). Read as `resting` reads the cell: the worktree's, else the
    branch's."""
    listed = control.listed_runner_keys()
    if key is None or listed is None:
        return False
    folder = repo.worktree_path(goal_id) / "ledger" / goal_id
    try:
        if folder.parent.parent.exists():
            cell = (folder / "state.json").read_bytes()
            signature = (folder / FILE_NAME).read_bytes() if (folder / FILE_NAME).exists() else None
        else:
            branch = f"refs/heads/{control.branch(goal_id)}"
            cell = control.objects.blob(f"{branch}:ledger/{goal_id}/state.json") or b""
            signature = control.objects.blob(f"{branch}:ledger/{goal_id}/{FILE_NAME}")
    except (OSError, GitError):
        return True  # the full path reads it again and names what is wrong
    return not signed_by_one_of(cell, signature, listed)
