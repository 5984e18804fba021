"""Files of a build's change that hold a secret, held back from the goal branch.

A build that writes a detected secret into the worktree (a value the steps receive, a token
of a known shape: trust/redact.py) would commit it at the step's checkpoint, for good. So
before that checkpoint each such file is moved out of the worktree into the machine-local
`.git/harness/quarantine/<goal id>/` (hidden from every step, never committed), the file
put back as it was at the step's start, and the goal parks at `secret_in_change`, naming
file, line and receipt, never the value. An owner's `unpark secret_in_change`, bound to the
ledger head of that gate (whose event names the files), puts them back in the worktree,
where the next checkpoint commits them: a test fixture's key, say. A clone without the held
files (another machine) records them as missing and goes on without them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.store.fsutil import atomic_write
from harness.store.worktree import Worktree

if TYPE_CHECKING:
    from harness.trust.destructive.diff import FileChange
    from harness.trust.redact import Redactor

MAX_NAMED = 50  # secrets named in the record, at most


def secrets_in(changes: Sequence[FileChange], redactor: Redactor) -> list[str]:
    """`path:line receipt` for each secret an added line of the change holds."""
    found = []
    for change in changes:
        for number, text in change.added:
            found += [f"{change.path}:{number} {mark}" for mark in redactor.found(text)]
    return found


def leak_paths(leaks: Sequence[str]) -> list[str]:
    """The files `secrets_in` named (a path may hold ':', the line number follows the last)."""
    return sorted({leak.rsplit(" [redacted:", 1)[0].rsplit(":", 1)[0] for leak in leaks})


def folder(harness_dir: Path, goal_id: str) -> Path:
    return harness_dir / "quarantine" / goal_id


def hold_back(wt: Worktree, base: str, paths: Sequence[str], held: Path) -> None:
    """Each file of `paths` copied into `held` (0600, never a link), then put back in the
    worktree and its index as it was at `base` (removed when it did not exist)."""
    for rel in paths:
        source = wt.path / rel
        if source.is_symlink() or not source.is_file():
            continue  # a link's target is not the change; the restore below removes it
        target = held / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(target, source.read_bytes(), 0o600)
    wt.restore_paths(base, paths)


def put_back(wt: Worktree, paths: Sequence[str], held: Path) -> tuple[list[str], list[str]]:
    """The held files written into the worktree again: (restored, missing here). The
    quarantine of the goal is removed afterwards."""
    restored, missing = [], []
    for rel in paths:
        source = held / rel
        if source.is_symlink() or not source.is_file():
            missing.append(rel)
            continue
        target = wt.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, source.read_bytes())
        restored.append(rel)
    shutil.rmtree(held, ignore_errors=True)
    return restored, missing


def detail(leaks: Sequence[str]) -> str:
    shown = "; ".join(leaks[:10]) + (f"; … {len(leaks) - 10} more" if len(leaks) > 10 else "")
    return (
        f"the build wrote a secret into the change: {shown} (held back, never committed; "
        "rotate it if it is real, or `harness unpark` lets these files in as they are)"
    )
