"""A line rule: what one is, how one is written, and how it scans numbered lines.

Line rules match specific statements, never bare words. They run over the added and
removed lines of a diff and over the lines of a declared command.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

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
    id: str
    cls: str
    # Lower-case literals of which every match contains one. A substring test is a hundred
    # times cheaper than a failing search through a rule's alternatives, and most lines of
    # a large diff match no rule.
    needles: tuple[str, ...]
    needle_re: re.Pattern[str]
    pattern: re.Pattern[str]
    sides: str = "+-"  # "+" added lines, "-" removed lines
    scope: Callable[[PathFacts], bool] = _code
    # Case-insensitive twin, used in SQL files and in commands that run a SQL client; in
    # other code only upper-case keywords count ("create index of pages" is English).
    sql_pattern: re.Pattern[str] | None = None
    unless_next: re.Pattern[str] | None = None  # a match is void if the next line matches
    accept: Callable[[re.Match[str]], bool] | None = None  # a further check of the match


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
    source = _any(*alternatives)
    return LineRule(
        id=rule_id,
        cls=cls,
        needles=tuple(needles.split()),
        needle_re=re.compile("|".join(map(re.escape, needles.split()))),
        pattern=re.compile(source),
        sides=sides,
        scope=scope,
        sql_pattern=re.compile(source, re.IGNORECASE) if sql else None,
        unless_next=None if unless_next is None else re.compile(unless_next, re.IGNORECASE),
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


def scan(rule: LineRule, pattern: re.Pattern[str], side: Side) -> list[tuple[int, str]]:
    """The first MAX_HITS_PER_RULE_AND_FILE lines where the rule fires."""
    found: list[tuple[int, str]] = []
    for index in _candidates(rule, side):
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
