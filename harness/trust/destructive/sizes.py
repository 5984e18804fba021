"""Size rules: large removals (data_deletion).

Lock files and generated files do not count: a regenerated lock file routinely removes
thousands of lines and deletes nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.hits import Hit
from harness.trust.destructive.paths import glob_any, name_globs

DELETED_FILE_LINES = 200  # a deleted file of more than this many lines
FILE_REMOVED_LINES = 500  # more than this many lines removed from one surviving file
TOTAL_REMOVED_LINES = 2000  # more than this many lines removed across the whole diff

_GENERATED_NAMES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock"}
    | {"pipfile.lock", "uv.lock", "cargo.lock", "gemfile.lock", "composer.lock", "go.sum"}
    | {"flake.lock", "packages.lock.json", "pdm.lock", "mix.lock", "pubspec.lock"}
    | {"podfile.lock", "gradle.lockfile"}
)
_GENERATED_GLOBS = name_globs("*.min.js", "*.min.css", "*.map", "*.snap")
SIZE_RULES = {
    "large-file-deletion": "data_deletion",
    "large-removal-file": "data_deletion",
    "large-removal-total": "data_deletion",
}


def _counts_as_removal(change: FileChange) -> bool:
    name = posixpath.basename(change.path).lower()
    return name not in _GENERATED_NAMES and not glob_any(name, _GENERATED_GLOBS)


def file_size_hits(change: FileChange) -> list[Hit]:
    removed = len(change.removed)
    if not _counts_as_removal(change):
        return []
    if change.status == "D" and removed > DELETED_FILE_LINES:
        text = f"deleted file of {removed} lines"
        return [Hit("data_deletion", "large-file-deletion", change.path, None, text)]
    if change.status != "D" and removed > FILE_REMOVED_LINES:
        text = f"{removed} lines removed"
        return [Hit("data_deletion", "large-removal-file", change.path, None, text)]
    return []


def total_size_hits(changes: Sequence[FileChange]) -> list[Hit]:
    counted = [change for change in changes if _counts_as_removal(change)]
    total = sum(len(change.removed) for change in counted)
    if total <= TOTAL_REMOVED_LINES:
        return []
    text = f"{total} lines removed across {len(counted)} files"
    return [Hit("data_deletion", "large-removal-total", "", None, text)]
