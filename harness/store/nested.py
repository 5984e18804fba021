"""Nested repositories a build made inside a goal's worktree.

A folder below the worktree's root holding a `.git` (a folder, or a file naming one) is a
repository of its own, with a configuration the agent wrote: filters, hooks, an
fsmonitor. git run over the goal's worktree would look into it (`git status` recurses into
a submodule with that configuration), so such a folder is never trusted: the harness's
own git never recurses (`--ignore-submodules=all`), and a build that leaves one stops at
`tamper` (docs/guide/threat-model.md). The search reads only what the build added: the
changed paths (an untracked nested repository is staged as one path, a gitlink) and the
new ignored folders, walked without following links.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

MAX_WALKED = 500_000  # entries read below new ignored folders, at most, per build


def nested_repositories(
    root: Path, changed: Iterable[str], new_folders: Iterable[str]
) -> list[str]:
    """The folders (relative to `root`) that hold a `.git` of their own: of the changed
    paths, those that are such a folder; below each new ignored folder, any."""
    found = [path for path in changed if _holds_git(root / path)]
    budget = [MAX_WALKED]
    for folder in new_folders:
        found += _walk(root, folder.rstrip("/"), budget)
    return sorted(dict.fromkeys(found))


def _holds_git(path: Path) -> bool:
    return not path.is_symlink() and path.is_dir() and os.path.lexists(path / ".git")


def _walk(root: Path, folder: str, budget: list[int]) -> list[str]:
    """Every folder below `folder` (itself included) that holds a `.git`, without recursion
    and without following links. Past the budget the rest counts as one: a tree too big to
    read is refused as if it held a repository (fail closed)."""
    found: list[str] = []
    stack = [folder]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(root / rel))
        except OSError:
            continue
        budget[0] -= len(entries)
        if budget[0] < 0:
            return [*found, rel]
        for entry in entries:
            if entry.name == ".git":
                found.append(rel)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(f"{rel}/{entry.name}")
    return found
