"""`expect.globs` at the done gate: how many of the goal's files each glob matches.

The files are those of the commit the done gate judges (the worktree as the last step's
checkpoint committed it: what completes or ships; ignored files never count), never under
`ledger/` or `.harness/`. A glob is anchored at the repository root, as git's `:(glob)`
pathspec: `*` and `?` stay within one folder, `**` spans any number of folders, `[abc]`
matches one character, a trailing `/` means everything under it (the same matcher as the
destructive rules' `paths`). `new: true` counts only paths the goal's base commit
(`harness.record.changes.base_after`) does not hold. docs/specs/goal-file.md, "expect".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from harness.model.goal import HARNESS_TOPS, ExpectGlob
from harness.store.gitrepo import run_git
from harness.trust.destructive.paths import glob_regex


def tree_files(git_dir: Path, commit: str) -> list[str]:
    """Every file path at `commit` outside the harness's own folders."""
    listed = run_git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], git_dir)
    names = listed.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [n for n in names if n and n.split("/", 1)[0] not in HARNESS_TOPS]


def glob_matches(glob: str, files: list[str]) -> list[str]:
    pattern = re.compile(glob_regex("/" + glob))  # a leading '/' anchors it at the root
    return [name for name in files if pattern.fullmatch(name)]


def shortfalls(
    globs: tuple[ExpectGlob, ...], git_dir: Path, commit: str, base: Callable[[], str | None]
) -> list[str]:
    """One line per glob whose count is out of bounds, e.g. `expect.globs[0]: digest/*.md
    matched 0 new files (expected at least 1)`. `base` is asked only when a glob says `new`;
    without a recorded base no file counts as new (fail closed: a shortfall blocks)."""
    if not globs:
        return []
    files = tree_files(git_dir, commit)
    before: set[str] | None = None
    found = []
    for index, expect in enumerate(globs):
        matched = glob_matches(expect.glob, files)
        if expect.new:
            if before is None:
                known = base()
                before = set(tree_files(git_dir, known)) if known else set(files)
            matched = [name for name in matched if name not in before]
        count = len(matched)
        if count >= expect.min and (expect.max is None or count <= expect.max):
            continue
        noun = ("new " if expect.new else "") + ("file" if count == 1 else "files")
        bound = f"at least {expect.min}" if count < expect.min else f"at most {expect.max}"
        found.append(
            f"expect.globs[{index}]: {expect.glob} matched {count} {noun} (expected {bound})"
        )
    return found
