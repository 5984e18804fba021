"""Which goals this clone keeps a record of: `.git/harness/records/<id>` (machine-local,
never committed), holding the goal branch's name for whoever reads it.

A goal's record lives on its branch; a branch deleted (`git branch -D`, `update-ref -d`)
together with its worktree leaves nothing else behind, and a goal that merely never ran
looks the same. The marker tells them apart: written the first time the harness works on a
goal in this clone (cli.md, "A lost record"), it makes `verify`, `status` and `run` refuse
a goal whose branch is gone instead of skipping it or starting it afresh with a new budget.
It is removed by hand only, when a goal is retired on purpose. It vouches for nothing: a
marker missing or planted costs at most that check, never trust.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo

FOLDER = "records"


def marker(repo: Repo, goal_id: str) -> Path:
    return repo.common_dir / "harness" / FOLDER / goal_id


def remember(repo: Repo, goal_id: str, branch: str) -> None:
    """Mark the goal as recorded here (once: a stat when it already is)."""
    path = marker(repo, goal_id)
    if not path.is_file():
        atomic_write(path, f"{branch}\n".encode())


def recorded_goals(repo: Repo) -> set[str]:
    """The goal ids with a marker: one listing, no file read (status over thousands of
    goals); read without creating the folder (verify must work where `.git` is read-only)."""
    try:
        names = os.listdir(repo.common_dir / "harness" / FOLDER)
    except OSError:
        return set()
    return {name for name in names if not name.startswith(".")}  # not a write's temp file
