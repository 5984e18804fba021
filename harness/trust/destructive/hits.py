"""A hit: one piece of evidence that a change or a command is in a destructive class.

Also the classes' order, the bounds on a hit's text and on hits per rule and file, and the
order hits are reported in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.model.config import DESTRUCTIVE_CLASSES, DestructiveRule

CLASSES = DESTRUCTIVE_CLASSES  # the contract's eight, in its order

# A file with thousands of matching lines (a SQL dump) names enough evidence in its first
# few; the cap keeps the hit list, and any event that records it, bounded.
MAX_HITS_PER_RULE_AND_FILE = 10
TEXT_LIMIT = 200
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Hit:
    """One piece of evidence that a change (or a command) is in a destructive class."""

    cls: str  # one of CLASSES (or a class named by a config rule)
    rule: str  # a stable rule id: a built-in id, or config:<index>
    path: str  # repository path; "" for a command hit and for the whole-diff removal count
    line: int | None  # new line number (added), old line number (removed), None for a path
    text: str  # the matching line or command, one line, at most TEXT_LIMIT characters

    def describe(self) -> str:
        """`path:line: text (rule)`, one line, for logs and the report."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        head = f"{where}: " if where else ""
        return one_line(f"{head}{self.text} ({self.rule})")


def one_line(text: str) -> str:
    return _CONTROL_RE.sub(" ", text)


def clip(text: str) -> str:
    return one_line(text.strip())[:TEXT_LIMIT]


def ordered(hits: Iterable[Hit]) -> list[Hit]:
    """Unique hits, grouped by class in CLASSES order, then path, line and rule."""
    unique = dict.fromkeys(hits)
    return sorted(unique, key=lambda h: (class_rank(h.cls), h.path, h.line or 0, h.rule))


def class_rank(cls: str) -> int:
    return CLASSES.index(cls) if cls in CLASSES else len(CLASSES)


def classes_of(hits: Iterable[Hit]) -> tuple[str, ...]:
    """The classes hit, in CLASSES order (config-named classes last, by name)."""
    return tuple(sorted({hit.cls for hit in hits}, key=lambda cls: (class_rank(cls), cls)))


def owner_rules(blocking: Iterable[Hit], warned: Iterable[Hit]) -> dict[str, object]:
    """`{"owner_rules": {"config:0": "warned", ...}}`: each config rule that fired, and how
    (its counts over the goal: record/rulecounts.py); nothing when none fired."""
    fired = {h.rule: "hit" for h in blocking if h.rule.startswith("config:")}
    fired |= {h.rule: "warned" for h in warned}
    return {"owner_rules": dict(sorted(fired.items()))} if fired else {}


def split_enforced(
    hits: Iterable[Hit], extra: Sequence[DestructiveRule]
) -> tuple[list[Hit], list[Hit]]:
    """The hits that block, and the hits of config rules with `enforce: warn` (recorded as
    warned, never parking). Built-in rules always block (destructive.md)."""
    warn = {f"config:{index}" for index, rule in enumerate(extra) if rule.enforce == "warn"}
    blocking: list[Hit] = []
    warned: list[Hit] = []
    for hit in hits:
        (warned if hit.rule in warn else blocking).append(hit)
    return blocking, warned
