"""Where to read a goal's record from: its worktree, its branch, or a ledger folder."""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InvalidInput, TrustFailure
from harness.model.goalid import check_goal_id
from harness.record.hydrate import Committed, GoalPaths, committed_view
from harness.store.gitrepo import Repo, run_git
from harness.store.objects import MISSING, ref_trouble, restore_hint
from harness.store.recorded import marker
from harness.store.worktree import open_worktree


@dataclass(frozen=True)
class Located:
    paths: GoalPaths
    committed: Committed | None
    origin: str  # "worktree", "branch" or "checkout"


@contextmanager
def locate(
    repo: Repo, goal_id: str, branch: str, remote_ref: str | None = None
) -> Iterator[Located]:
    """Where to read a goal's record from, best first: worktree, branch, the remote's
    branch (`remote_ref`, e.g. refs/remotes/origin/harness/<id>), checkout folder."""
    check_goal_id(goal_id, "goal id")
    wt = open_worktree(repo, goal_id, branch)
    if wt is not None:
        paths = GoalPaths(wt.path, goal_id)
        yield Located(paths, committed_view(paths), "worktree")
        return
    if repo.rev_parse(f"refs/heads/{branch}"):
        with tempfile.TemporaryDirectory(prefix="harness-") as tmp:
            yield _from_branch(repo, branch, goal_id, Path(tmp))
        return
    refuse_lost(repo, goal_id, branch)
    if remote_ref is not None and repo.rev_parse(remote_ref):
        with tempfile.TemporaryDirectory(prefix="harness-") as tmp:
            yield _from_branch(repo, remote_ref, goal_id, Path(tmp))
        return
    paths = GoalPaths(repo.root, goal_id)
    if paths.folder.is_dir():
        # A copied record (this project's example run), not a goal branch: regenerating it
        # is a new history, so only its current commit is checked.
        yield Located(paths, committed_view(paths, history=False), "checkout")
        return
    raise NoRecord(
        f"goal {goal_id}: no record yet (no worktree, no branch {branch}, no ledger/{goal_id})"
    )


class NoRecord(InvalidInput):
    """A goal with no record anywhere here: never run (a listing skips it)."""


def refuse_lost(repo: Repo, goal_id: str, branch: str) -> None:
    """With no worktree here (`checked_worktree` names a kept worktree's lost branch) and no
    branch that resolves: raise when the branch is broken (its ref is there and names no
    commit), or missing while this clone kept the goal's record (`store/recorded.py`). A
    goal that never ran has neither and is not refused."""
    trouble = ref_trouble(repo.root, f"refs/heads/{branch}")
    path = marker(repo, goal_id)
    if trouble is None or (trouble == MISSING and not path.is_file()):
        return
    shown = path.relative_to(repo.root) if path.is_relative_to(repo.root) else path
    kept = f", yet this clone kept the goal's record ({shown})" if path.is_file() else ""
    retired = f"; if the goal was retired on purpose, remove {shown}" if kept else ""
    raise TrustFailure(
        f"branch {branch} {trouble}{kept}: goal {goal_id}'s record cannot be read here and "
        f"nothing was run or started afresh; {restore_hint(branch, trouble, None)}{retired}"
    )


def _from_branch(repo: Repo, branch: str, goal_id: str, tmp: Path) -> Located:
    archive = run_git(
        ["archive", "--format=tar", branch, f"ledger/{goal_id}"], repo.root, check=False
    )
    if archive.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, filter="data")
    paths = GoalPaths(tmp, goal_id)
    view = _branch_committed(repo, branch, paths)
    return Located(paths, view, "branch")


def _branch_committed(repo: Repo, branch: str, paths: GoalPaths) -> Committed:
    cell = repo.read_blob(branch, f"{paths.rel}/state.json")
    sizes = (
        {p.name: p.stat().st_size for p in paths.events.glob("*.jsonl")}
        if paths.events.is_dir()
        else {}
    )
    return Committed(cell, sizes)
