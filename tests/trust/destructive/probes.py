"""Probes: one small input each, classified with the built-in rules only."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.trust.destructive.classify import classify_changes, classify_command
from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.hits import Hit


@dataclass(frozen=True)
class Stored:
    """Files' old and new versions, as `contents.StagedContents` reads them from git."""

    old_files: Mapping[str, str] = field(default_factory=dict)
    new_files: Mapping[str, str] = field(default_factory=dict)

    def old(self, path: str) -> bytes | None:
        text = self.old_files.get(path)
        return None if text is None else text.encode()

    def new(self, path: str) -> bytes | None:
        text = self.new_files.get(path)
        return None if text is None else text.encode()


@dataclass(frozen=True)
class Probe:
    label: str
    changes: tuple[FileChange, ...] = ()
    argv: tuple[str, ...] | None = None
    contents: Stored | None = None

    def hits(self) -> list[Hit]:
        if self.argv is not None:
            return classify_command(self.argv)
        return classify_changes(self.changes, contents=self.contents)


def change(
    path: str, status: str = "M", added: Sequence[str] = (), removed: Sequence[str] = ()
) -> FileChange:
    return FileChange(
        path=path,
        status=status,
        added=tuple(enumerate(added, start=1)),
        removed=tuple(enumerate(removed, start=1)),
        binary=False,
    )


def path(name: str, status: str = "A") -> Probe:
    return Probe(f"{status} {name}", (change(name, status),))


def added(name: str, *lines: str) -> Probe:
    return Probe(f"{name} +{lines[0]!r}", (change(name, added=lines),))


def removed(name: str, *lines: str) -> Probe:
    return Probe(f"{name} -{lines[0]!r}", (change(name, removed=lines),))


def command(*argv: str) -> Probe:
    return Probe("$ " + " ".join(argv), argv=argv)


def removing(name: str, count: int, status: str = "M", files: int = 1) -> Probe:
    names = [name] if files == 1 else [f"{i}/{name}" for i in range(files)]
    lines = [f"value_{n} = {n}" for n in range(count)]
    changes = tuple(change(each, status, removed=lines) for each in names)
    return Probe(f"{status} {files} x {name} -{count} lines", changes)


def edited(
    name: str, old: str | None, new: str | None, staged: Mapping[str, str] | None = None
) -> Probe:
    """`name` changed from `old` to `new` (None: absent), numbered as `git diff -U0` would;
    the probe's contents hold both versions, and other files as `staged`."""
    old_lines, new_lines = (old or "").splitlines(), (new or "").splitlines()
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += ((n + 1, old_lines[n]) for n in range(i1, i2))
            added += ((n + 1, new_lines[n]) for n in range(j1, j2))
    status = "A" if old is None else "D" if new is None else "M"
    olds = {} if old is None else {name: old}
    news = dict(staged or {}) | ({} if new is None else {name: new})
    change = FileChange(name, status, tuple(added), tuple(removed), binary=False)
    return Probe(f"{status} {name} {new or old!r:.40}", (change,), contents=Stored(olds, news))
