"""Where the file rules read whole files: the base's blob and the staged one.

Through `Worktree.blob` (`git cat-file`), which gives a blob's stored bytes: no clean or
smudge filter, no textconv and no end-of-line conversion, whatever `.gitattributes` says,
so a rule reads what the owner reviews. Only the files a file rule names are read
(`file_rule.FileRule.reads`), and each at most once (`file_rule.Versions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.store.worktree import Worktree


@dataclass(frozen=True)
class StagedContents:
    """A goal worktree's files at `base` (old) and in its index (new, as staged)."""

    wt: Worktree
    base: str

    def old(self, path: str) -> bytes | None:
        return self.wt.blob(f"{self.base}:{path}")

    def new(self, path: str) -> bytes | None:
        return self.wt.blob(f":0:{path}")  # stage 0: a path like `1:x` stays a path
