"""A file rule: one kind of file, chosen by its name, read as a whole or as its diff.

Some changes mean something only in their file's structure: a `postinstall` key is a
lifecycle script under `scripts` of a `package.json` and a package name elsewhere; a
lock file's source host is new only if the old version lacks it. A file rule names the
files it reads (no other file is read) and gets the change with its old and new text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.paths import PathFacts


class Contents(Protocol):
    """A changed file's versions as git stores them (never through a filter or textconv)."""

    def old(self, path: str) -> bytes | None:
        """The file at the diff's base, None when it has none."""

    def new(self, path: str) -> bytes | None:
        """The file as staged, None when it is not."""


class Versions:
    """The old and new text of one changed file, each read at most once, None if unknown.

    An added file's new text is its added lines and a deleted file's old text its removed
    lines (the diff holds the whole file); a modified file's are read from `contents`,
    and are unknown (None) without it: the rules then fall back on the diff's lines."""

    def __init__(self, change: FileChange, contents: Contents | None) -> None:
        self.change = change
        self.contents = contents

    @cached_property
    def old(self) -> str | None:
        change = self.change
        if change.status == "A":
            return ""
        if change.status == "D" and not change.binary:
            return _joined(change.removed)
        return self._read(self.contents.old if self.contents else None)

    @cached_property
    def new(self) -> str | None:
        change = self.change
        if change.status == "D":
            return ""
        if change.status == "A" and not change.binary:
            return _joined(change.added)
        return self._read(self.contents.new if self.contents else None)

    def staged(self, path: str) -> str | None:
        """Another file as staged (the root `.gitattributes`), None when unknown."""
        data = self.contents.new(path) if self.contents else None
        return None if data is None else _text(data)

    def _read(self, read: Callable[[str], bytes | None] | None) -> str | None:
        data = read(self.change.path) if read is not None else None
        return None if data is None else _text(data)


def _joined(lines: tuple[tuple[int, str], ...]) -> str:
    return "\n".join(text for _, text in lines)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


Found = list[tuple[int | None, str]]  # (line number or None, the evidence), in file order


@dataclass(frozen=True)
class FileRule:
    id: str
    cls: str
    reads: Callable[[PathFacts], bool]  # by name: the only files this rule reads
    check: Callable[[FileChange, PathFacts, Versions], Found]
