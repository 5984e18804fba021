"""What runs and ships is what the harness committed: the goal branch and the worktree
against the tree the MAC'd cell names (`trust.md`, "Bound to the harness's commit").

Every checkpoint writes into the cell the work tree id (the tree without `ledger/`) of the
commit it makes. Before a decision is used and before every step, the goal branch head must
hold the tree its committed cell names (a commit pushed or left on the branch by anyone
else changes it), and the worktree the tree the working cell names (an edit by any process
after the harness committed). Anything else stops the goal at `tamper` naming what differs.
"""

from __future__ import annotations

from harness.record.cell import Cell, parse_cell
from harness.record.hydrate import GoalPaths
from harness.store.gitrepo import GitError
from harness.store.worktree import Worktree

MAX_NAMED = 20


def unbound(
    wt: Worktree,
    paths: GoalPaths,
    key: bytes,
    cell: Cell,
    vouched: bool,
    fresh: str | None = None,
) -> tuple[str | None, str | None]:
    """Why the branch head or the worktree is not what the harness committed, or None;
    and the work tree id it staged and compared (None when it compared none).

    `vouched`: the working cell was written at the ledger's head (no roll-forward), so its
    tree names the worktree too. A cell written before the field existed names no tree.
    `fresh`: the work tree id this process staged and found equal to the cell's with no
    step and no commit since (the first step after loading): not scanned again."""
    committed = _committed_tree(wt, paths, key)
    head_tree = wt.tree_without("HEAD")
    if committed is not None and head_tree != committed:
        head = wt.head()
        return (
            f"the goal branch head {head[:12]} holds changes the harness did not commit: "
            + _named(_changes(wt, committed, head_tree))
        ), None
    # A step cut off mid-way left its work in the worktree: `step.cutoff` records it as work
    # in progress, and a build run again has it checked as its own change.
    if vouched and cell.in_flight is None and cell.tree is not None:
        now = fresh if fresh == cell.tree else wt.work_tree_id()
        if now != cell.tree:
            return "the worktree differs from what the harness last committed: " + _named(
                _changes(wt, cell.tree, now)
            ), None
        return None, now
    return None, None


def same_tree(wt: Worktree, commit: str, cell: Cell) -> bool:
    """`commit` holds the tree the cell names (a cell without one vouches for nothing)."""
    return cell.tree is None or wt.tree_without(commit) == cell.tree


def _committed_tree(wt: Worktree, paths: GoalPaths, key: bytes) -> str | None:
    source = f"{paths.rel}/state.json"
    blob = wt.blob(f"HEAD:{source}")
    if blob is None:
        return None
    return parse_cell(blob, f"HEAD:{source}", paths.goal_id, key).tree


def _changes(wt: Worktree, old: str, new: str) -> list[str]:
    """The paths that differ, or none named when git no longer has the recorded tree: the
    tree a cell names is not on any branch (the work without `ledger/`), and a prune beside
    a run removes it. The difference is still found and gated; only its list is lost."""
    try:
        return wt.tree_changes(old, new)
    except GitError:
        return []


def _named(changed: list[str]) -> str:
    shown = ", ".join(changed[:MAX_NAMED]) or "(the trees differ)"
    more = len(changed) - MAX_NAMED
    return shown + (f" and {more} more" if more > 0 else "")
