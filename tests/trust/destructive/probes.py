"""Probes: one small input each, classified with the built-in rules only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.trust.destructive.classify import classify_changes, classify_command
from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.hits import Hit


@dataclass(frozen=True)
class Probe:
    label: str
    changes: tuple[FileChange, ...] = ()
    argv: tuple[str, ...] | None = None

    def hits(self) -> list[Hit]:
        if self.argv is not None:
            return classify_command(self.argv)
        return classify_changes(self.changes)


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
