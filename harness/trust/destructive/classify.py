"""Classifying: every destructive-class hit in a parsed diff, or in a declared command.

After every build the controller hands this module the staged diff of the goal worktree,
and before running them, every step command the goal declares. A hit parks the goal at
eyes with gate `destructive:<class>` until a human signs an unpark for that class.

The built-in rules are documented, each with an example that fires and one that does not,
in docs/specs/destructive.md; tests/trust/destructive/test_rules.py holds every rule id to
a firing and a non-firing case. False positives cost a human a look, so paths match whole
segments and line rules match specific statements, never bare words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from harness.trust.destructive.commands import SQL_CLIENT_RE
from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.file_rule import Contents, Versions
from harness.trust.destructive.hits import MAX_HITS_PER_RULE_AND_FILE, Hit, clip, ordered
from harness.trust.destructive.line_rule import scan, side_of
from harness.trust.destructive.path_rules import PATH_RULES
from harness.trust.destructive.paths import SQL_SUFFIXES, PathFacts, glob_regex, path_facts
from harness.trust.destructive.rules import FILE_RULES, LINE_RULES
from harness.trust.destructive.sizes import file_size_hits, total_size_hits

if TYPE_CHECKING:  # keeps importing this module cheap: config pulls in YAML and schemas
    from harness.model.config import DestructiveRule


def classify_changes(
    changes: Sequence[FileChange],
    extra: Sequence[DestructiveRule] = (),
    contents: Contents | None = None,
) -> list[Hit]:
    """Every destructive-class hit in a parsed diff, built-in rules then config rules.

    `contents` (`contents.StagedContents`): the old and new versions of the few files a
    file rule reads; without it those rules read the diff's lines only."""
    hits: list[Hit] = []
    for change in changes:
        facts = path_facts(change.path)
        hits += _path_hits(change, facts)
        hits += _line_hits(change, facts)
        hits += _file_hits(change, facts, contents)
        hits += file_size_hits(change)
    hits += total_size_hits(changes)
    hits += _extra_change_hits(changes, extra)
    return ordered(hits)


def classify_command(argv: Sequence[str], extra: Sequence[DestructiveRule] = ()) -> list[Hit]:
    """Hits for a declared step command (not the ship command: ship is always gated)."""
    command = " ".join(argv)
    side = side_of(tuple(enumerate(command.splitlines(), start=1)))
    in_sql_client = SQL_CLIENT_RE.search(command) is not None
    hits: list[Hit] = []
    for rule in LINE_RULES:
        hits += (_command_hit(rule.cls, rule.id, t) for _, t in scan(rule, in_sql_client, side))
    for index, config_rule in enumerate(extra):
        patterns = [re.compile(source) for source in config_rule.lines]
        matched = (text for _, text in side.lines if any(p.search(text) for p in patterns))
        hits += (_command_hit(config_rule.cls, f"config:{index}", text) for text in matched)
    return ordered(hits)


def _command_hit(cls: str, rule: str, text: str) -> Hit:
    return Hit(cls, rule, "", None, clip(text))


def _path_hits(change: FileChange, facts: PathFacts) -> list[Hit]:
    text = _STATUS_TEXT.get(change.status, "changed file")
    return [
        Hit(rule.cls, rule.id, change.path, None, text)
        for rule in PATH_RULES
        if change.status in rule.statuses and rule.test(facts)
    ]


_STATUS_TEXT = {"A": "added file", "M": "modified file", "D": "deleted file"}


def _line_hits(change: FileChange, facts: PathFacts) -> list[Hit]:
    if change.binary:
        return []
    in_sql_file = facts.suffix in SQL_SUFFIXES
    sides = (("+", side_of(change.added)), ("-", side_of(change.removed)))
    hits: list[Hit] = []
    for rule in LINE_RULES:
        if not rule.scope(facts):
            continue
        for sign, side in sides:
            if sign in rule.sides:
                found = scan(rule, in_sql_file, side)
                hits += (Hit(rule.cls, rule.id, change.path, n, clip(t)) for n, t in found)
    return hits


def _file_hits(change: FileChange, facts: PathFacts, contents: Contents | None) -> list[Hit]:
    rules = [rule for rule in FILE_RULES if rule.reads(facts)]
    if not rules:
        return []
    versions = Versions(change, contents)  # shared: each version is read at most once
    hits: list[Hit] = []
    for rule in rules:
        found = rule.check(change, facts, versions)[:MAX_HITS_PER_RULE_AND_FILE]
        hits += (Hit(rule.cls, rule.id, change.path, n, clip(t)) for n, t in found)
    return hits


def _extra_change_hits(
    changes: Sequence[FileChange], extra: Sequence[DestructiveRule]
) -> list[Hit]:
    hits: list[Hit] = []
    for index, rule in enumerate(extra):
        globs = [re.compile(glob_regex(glob)) for glob in rule.paths]
        patterns = [re.compile(source) for source in rule.lines]
        for change in changes:
            hits += _extra_hits(rule.cls, f"config:{index}", change, globs, patterns)
    return hits


def _extra_hits(
    cls: str,
    rule_id: str,
    change: FileChange,
    globs: Sequence[re.Pattern[str]],
    patterns: Sequence[re.Pattern[str]],
) -> Iterable[Hit]:
    if any(glob.fullmatch(change.path) for glob in globs):
        yield Hit(cls, rule_id, change.path, None, _STATUS_TEXT.get(change.status, "changed file"))
    count = 0
    for side, lines in (("+", change.added), ("-", change.removed)):
        for number, text in lines:
            # Also searched with the diff's own +/- in front, so `^\+` means "added only".
            if any(p.search(text) or p.search(side + text) for p in patterns):
                yield Hit(cls, rule_id, change.path, number, clip(text))
                count += 1
                if count >= MAX_HITS_PER_RULE_AND_FILE:
                    return
