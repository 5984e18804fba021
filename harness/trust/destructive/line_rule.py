"""A line rule: what one is, how one is written, and how it scans numbered lines.

Line rules match specific statements, never bare words. They run over the added and
removed lines of a diff and over the lines of a declared command.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from harness.trust.destructive.hits import MAX_HITS_PER_RULE_AND_FILE
from harness.trust.destructive.paths import PathFacts


def _code(p: PathFacts) -> bool:
    """Files that run or configure something: everything but prose."""
    return not p.prose


def anywhere(p: PathFacts) -> bool:
    """Key material leaks from a README as surely as from code."""
    return True


@dataclass(frozen=True)
class LineRule:
    """A rule's regular expressions are compiled on first use: of the ~80 built-in rules a
    build's diff reaches the patterns of only those whose needle a line holds, and compiling
    all of them at import cost ~60 ms of every process that classifies (performance.md)."""

    id: str
    cls: str
    # Lower-case literals of which every match contains one. A substring test is a hundred
    # times cheaper than a failing search through a rule's alternatives, and most lines of
    # a large diff match no rule.
    needles: tuple[str, ...]
    source: str
    sides: str = "+-"  # "+" added lines, "-" removed lines
    scope: Callable[[PathFacts], bool] = _code
    # A case-insensitive twin of `pattern` (`sql_pattern`), used in SQL files and in
    # commands that run a SQL client; in other code only upper-case keywords count
    # ("create index of pages" is English).
    sql: bool = False
    unless_source: str | None = None  # a match is void if the next line matches
    accept: Callable[[re.Match[str]], bool] | None = None  # a further check of the match

    @cached_property
    def needle_re(self) -> re.Pattern[str]:
        return re.compile("|".join(map(re.escape, self.needles)))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    @cached_property
    def sql_pattern(self) -> re.Pattern[str] | None:
        return re.compile(self.source, re.IGNORECASE) if self.sql else None

    @cached_property
    def unless_next(self) -> re.Pattern[str] | None:
        unless = self.unless_source
        return None if unless is None else re.compile(unless, re.IGNORECASE)


def _any(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


def line_rule(
    rule_id: str,
    cls: str,
    needles: str,
    *alternatives: str,
    sides: str = "+-",
    scope: Callable[[PathFacts], bool] = _code,
    sql: bool = False,
    unless_next: str | None = None,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> LineRule:
    if needles != needles.lower():  # lines are lowered before the needle test
        raise ValueError(f"{rule_id}: needles must be lower case: {needles!r}")
    return LineRule(
        id=rule_id,
        cls=cls,
        needles=tuple(needles.split()),
        source=_any(*alternatives),
        sides=sides,
        scope=scope,
        sql=sql,
        unless_source=unless_next,
        accept=accept,
    )


# A command word where a shell command starts: line start (after "- ", "$ " or "run:"),
# after ; & | ( or `, or after sudo/exec/npx. Used for short program names (stripe, sam).
AT = r"(?:^\s*(?:-\s+|\$\s+|run:\s*)?|[;&|(`]\s*|\$\(\s*|\bsudo\s+|\bexec\s+|\bnpx\s+)"
# The rest of one shell command: stops at ; & | # and newlines. Bounded, like every run
# in the rules that a later part must backtrack over, so a huge one-line file stays linear.
ARGS = r"[^\n;&|#]{0,300}?"
TABLE = r"[\w.\"`\[\]{}$]+"


@dataclass(frozen=True)
class Side:
    """Numbered lines (one side of a file's diff, or a command), lowered once for needles."""

    lines: Sequence[tuple[int, str]]
    lowered: str  # every line lower-cased, joined with newlines
    starts: tuple[int, ...]  # where each line starts in `lowered`
    by_number: Mapping[int, str]


def side_of(lines: Sequence[tuple[int, str]]) -> Side:
    texts = [text.lower() for _, text in lines]
    starts, offset = [], 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    return Side(lines, "\n".join(texts), tuple(starts), dict(lines))


def _candidates(rule: LineRule, side: Side) -> list[int]:
    """Indexes of the lines that hold one of the rule's needles, in order."""
    # Substring tests over the whole side are fast C scans; most rules stop here.
    if not any(needle in side.lowered for needle in rule.needles):
        return []
    starts, matches = side.starts, rule.needle_re.finditer(side.lowered)
    return sorted({bisect.bisect_right(starts, match.start()) - 1 for match in matches})


def _fires(rule: LineRule, pattern: re.Pattern[str], text: str) -> bool:
    if rule.accept is None:
        return pattern.search(text) is not None
    # `rm -rf build; rm -rf data`: a later match can pass where the first one did not.
    return any(rule.accept(match) for match in pattern.finditer(text))


def scan(rule: LineRule, sql: bool, side: Side) -> list[tuple[int, str]]:
    """The first MAX_HITS_PER_RULE_AND_FILE lines where the rule fires; `sql`: in SQL (a
    SQL file, a command running a SQL client), where keywords match in any case. A rule's
    expression is compiled only once some line holds one of its needles."""
    found: list[tuple[int, str]] = []
    candidates = _candidates(rule, side)
    if not candidates:
        return found
    pattern = rule.sql_pattern if sql and rule.sql_pattern else rule.pattern
    for index in candidates:
        number, text = side.lines[index]
        if not _fires(rule, pattern, text):
            continue
        after = side.by_number.get(number + 1, "")
        if rule.unless_next is not None and rule.unless_next.search(after):
            continue
        found.append((number, text))
        if len(found) >= MAX_HITS_PER_RULE_AND_FILE:
            break
    return found
