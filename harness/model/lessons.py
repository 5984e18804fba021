"""Lessons (lessons/<name>.yaml on the control ref, version 1): the team's memory.

A lesson says when it applies (keywords or regular expressions matched against a goal's
objective and its failing test), what the build agent is told, and optionally a check
command whose exit 0 shows, at the done gate, that the repository applies the lesson.
This module parses a lesson file into a `Lesson` and says whether it matches; the loop
chooses and presents the lessons a build is given (`loop/lessons.py`) and runs their
checks (`loop/lesson_checks.py`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import invalid
from harness.model import yamlutil
from harness.model.goal import command_argv  # the same `run` rules as a goal step
from harness.model.goalid import GOAL_ID_EXPECTED, GOAL_ID_RE
from harness.model.limits import parse_duration
from harness.model.wording import show_value

MAX_LESSON_FILE_BYTES = 64 * 1024
MAX_LESSON_TEXT_CHARS = 4_000
MAX_LESSONS = 200
MAX_KEYWORD_CHARS = 100
# Matching cost grows with pattern size; 500 characters is far more than a real one needs.
MAX_PATTERN_CHARS = 500
MAX_WHEN_ENTRIES = 50  # keywords and patterns together, per lesson
# The failing test id comes from output the agent can influence: only its start is
# matched, which bounds what a slow pattern can cost.
MAX_MATCHED_TEST_CHARS = 500
# Python's re backtracks, so side-by-side repeats multiply: on 500 characters \w*\w*!
# takes 0.2 s and \w*\w*\w*! 24 s. A pattern's "ways" is the product of what each repeat
# can take (* and + count 500, ? 2, {2,5} 4); the limit allows two unbounded repeats and
# one ?, or one unbounded repeat and nine ?, about half a second at worst.
MAX_MATCH_WAYS = 500_000
DEFAULT_CHECK_TIMEOUT_S = 10 * 60
LESSONS_DIR = "lessons"
SCHEMA = "lesson.schema.json"

LESSON_NAME_EXPECTED = GOAL_ID_EXPECTED + ", then .yaml"
KEYWORD_EXPECTED = f"a word or phrase of at most {MAX_KEYWORD_CHARS} characters"
PATTERN_EXPECTED = f"a Python regular expression of at most {MAX_PATTERN_CHARS} characters"
SAFE_PATTERN_EXPECTED = (
    "a pattern without backreferences, without a repeat or '|' inside a repeat, and with at "
    f"most {MAX_MATCH_WAYS:,} ways to split a match (see docs/specs/lessons.md)"
)
TEXT_EXPECTED = f"what the agent should be told, at most {MAX_LESSON_TEXT_CHARS:,} characters"
WHEN_EXPECTED = f"at least 1 and at most {MAX_WHEN_ENTRIES} keywords and patterns in all"

# re's own parser is private but present from 3.11 on; it is the only way to see a
# pattern's structure without writing a second regular-expression parser.
_re_parser: Any = importlib.import_module("re._parser")
_re_constants: Any = importlib.import_module("re._constants")
_BACKTRACKING_REPEATS = frozenset({_re_constants.MAX_REPEAT, _re_constants.MIN_REPEAT})
# Never backtracked into once matched (lookarounds are atomic in Python's re).
_ATOMIC = frozenset(
    {
        _re_constants.ATOMIC_GROUP,
        _re_constants.POSSESSIVE_REPEAT,
        _re_constants.ASSERT,
        _re_constants.ASSERT_NOT,
    }
)


@dataclass(frozen=True)
class Lesson:
    name: str  # the file's stem; same rules as a goal id
    keywords: tuple[str, ...]  # whole words or phrases, case-insensitive
    patterns: tuple[re.Pattern[str], ...]  # re.search, compiled with re.IGNORECASE
    text: str  # put into the build prompt, as written
    check: tuple[str, ...] | None  # argv; exit 0 means the lesson is applied
    check_timeout_s: int  # DEFAULT_CHECK_TIMEOUT_S when there is no check
    sha256: str  # hex SHA-256 of the exact file bytes, recorded in the ledger
    source: str  # "lessons/<name>.yaml"
    check_enforce: str = "block"  # "warn": a failed check is recorded, not a done-gate block

    def matches(self, objective: str, failing_test: str | None) -> bool:
        """Whether any keyword or pattern occurs in the objective or the failing test."""
        return self.match_reason(objective, failing_test) is not None

    def match_reason(self, objective: str, failing_test: str | None) -> str | None:
        """Why the lesson applies, e.g. `keyword 'alembic' in the objective`, or None."""
        for where, text in _subjects(objective, failing_test):
            reason = self._reason_in(text)
            if reason is not None:
                return f"{reason} in {where}"
        return None

    def as_ref(self) -> dict[str, str]:
        """What the ledger records of a lesson given to a build."""
        return {"name": self.name, "sha256": self.sha256}

    def _reason_in(self, text: str) -> str | None:
        folded = _fold(text)
        for keyword in self.keywords:
            if _has_word(folded, _fold(keyword)):
                return f"keyword {show_value(keyword)}"
        for pattern in self.patterns:
            if pattern.search(text):
                return f"pattern {show_value(pattern.pattern)}"
        return None


# ---------------------------------------------------------------------------------------
# Matching


def _subjects(objective: str, failing_test: str | None) -> Iterator[tuple[str, str]]:
    # Matched one at a time, so no pattern can span the objective and the test id.
    yield "the objective", objective
    if failing_test:
        yield "the failing test", failing_test[:MAX_MATCHED_TEST_CHARS]


@functools.lru_cache(maxsize=1024)
def _fold(text: str) -> str:
    """Case- and spacing-insensitive form: a phrase matches across a line break."""
    return " ".join(text.casefold().split())


def _has_word(folded_text: str, folded_word: str) -> bool:
    """`folded_word` occurs with no letter or digit right before or after it.

    Only letters and digits make words, so `_`, `-`, `.` and `/` separate them: `migration`
    matches `test_migration_down` (test ids are snake_case) but not `migrations`.
    """
    start = folded_text.find(folded_word)
    while start != -1:
        end = start + len(folded_word)
        if _is_edge(folded_text, start - 1) and _is_edge(folded_text, end):
            return True
        start = folded_text.find(folded_word, start + 1)
    return False


def _is_edge(text: str, index: int) -> bool:
    return not 0 <= index < len(text) or not text[index].isalnum()


# ---------------------------------------------------------------------------------------
# Loading and validation


def lesson_source(name: str) -> str:
    """`lessons/<name>.yaml`, the path used in messages for the lesson called `name`."""
    # A file name in git may hold a newline; a message must stay one line.
    shown = name if name.isprintable() else show_value(name)
    return f"{LESSONS_DIR}/{shown}.yaml"


def load_lessons(files: Mapping[str, bytes]) -> tuple[Lesson, ...]:
    """Lessons from {name: file bytes} (the caller reads lessons/*.yaml), sorted by name."""
    if len(files) > MAX_LESSONS:
        problem = f"holds {len(files)} lesson files"
        raise invalid(f"{LESSONS_DIR}/", "", problem, f"at most {MAX_LESSONS}")
    return tuple(parse_lesson(files[name], lesson_source(name), name) for name in sorted(files))


def parse_lesson(data: bytes, source: str, name: str) -> Lesson:
    """Validate a lesson file's bytes into a Lesson; InvalidInput for anything else.

    Order: name, size, YAML, top-level mapping, JSON Schema, then what a schema cannot
    express: when (count, keywords, patterns), text, check.
    """
    _check_name(name, source)
    yamlutil.check_size(data, MAX_LESSON_FILE_BYTES, source)
    raw = yamlutil.expect_mapping(yamlutil.load_yaml(data, source), source)
    yamlutil.validate(raw, SCHEMA, source)
    return _lesson_from(raw, data, source, name)


def _check_name(name: str, source: str) -> None:
    # fullmatch: with search or match, "$" would accept a trailing newline.
    if not GOAL_ID_RE.fullmatch(name):
        problem = f"{show_value(name)} is not a valid lesson name"
        raise invalid(source, "", problem, LESSON_NAME_EXPECTED)


def _lesson_from(raw: Mapping[str, Any], data: bytes, source: str, name: str) -> Lesson:
    when = raw["when"]
    raw_keywords, raw_patterns = when.get("keywords", []), when.get("patterns", [])
    _check_when_size(len(raw_keywords) + len(raw_patterns), source)
    keywords = tuple(
        _keyword(word, source, f"when.keywords[{index}]") for index, word in enumerate(raw_keywords)
    )
    patterns = tuple(
        _pattern(text, source, f"when.patterns[{index}]") for index, text in enumerate(raw_patterns)
    )
    text = _checked_text(raw["text"], source)
    check, timeout_s = _check(raw.get("check"), source)
    return Lesson(
        name=name,
        keywords=keywords,
        patterns=patterns,
        text=text,
        check=check,
        check_timeout_s=timeout_s,
        sha256=hashlib.sha256(data).hexdigest(),
        source=source,
        check_enforce=(raw.get("check") or {}).get("enforce", "block"),
    )


def _check_when_size(count: int, source: str) -> None:
    # Checked before any pattern compiles, so a huge list costs nothing.
    if count == 0:
        raise invalid(source, "when", "has no keywords and no patterns", WHEN_EXPECTED)
    if count > MAX_WHEN_ENTRIES:
        raise invalid(source, "when", f"has {count} keywords and patterns", WHEN_EXPECTED)


def _keyword(word: str, source: str, key: str) -> str:
    normal = " ".join(word.split())
    if not normal:
        raise invalid(source, key, "is blank", KEYWORD_EXPECTED)
    if len(normal) > MAX_KEYWORD_CHARS:
        raise invalid(source, key, f"is {len(normal):,} characters long", KEYWORD_EXPECTED)
    return normal


def _pattern(text: str, source: str, key: str) -> re.Pattern[str]:
    if len(text) > MAX_PATTERN_CHARS:
        raise invalid(source, key, f"is {len(text):,} characters long", PATTERN_EXPECTED)
    try:
        pattern = _compile(text)
    # re raises OverflowError for huge repeat counts and RecursionError for very deep
    # nesting; both are this pattern's fault, not the harness's.
    except (re.error, OverflowError, RecursionError) as exc:
        problem = f"{show_value(text)} does not compile: {exc}"
        raise invalid(source, key, problem, PATTERN_EXPECTED) from None
    except FutureWarning as exc:
        problem = f"{show_value(text)} is ambiguous: {exc}"
        raise invalid(source, key, problem, PATTERN_EXPECTED) from None
    cost = _cost_problem(text)
    if cost is not None:
        raise invalid(source, key, f"{show_value(text)} {cost}", SAFE_PATTERN_EXPECTED)
    return pattern


def _compile(text: str) -> re.Pattern[str]:
    # re warns (FutureWarning) about `[[` and `--` in a set, whose meaning a later Python
    # will change; a lesson must mean one thing, and a warning on stderr helps nobody.
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        return re.compile(text, re.IGNORECASE)


def _cost_problem(text: str) -> str | None:
    """Why searching with `text` could take minutes on a short input, or None.

    A repeat holding another repeat or an alternation, as in `(a+)+` or `(a|a)*`, can try
    exponentially many ways to match, and a backreference multiplies the work by the
    length: a test id the agent chose could make a build wait for hours.
    """
    tree = _re_parser.parse(text, re.IGNORECASE)
    if any(op == _re_constants.GROUPREF for op, _ in _items(tree)):
        return "uses a backreference, which can be very slow"
    if _ambiguous_loop(tree, in_loop=False):
        return "has a repeat or '|' inside a repeat, which can take exponential time"
    if _ways(tree) > MAX_MATCH_WAYS:
        problem = f"has repeats that can split a match in more than {MAX_MATCH_WAYS:,} ways"
        return problem + ", which can be very slow on a long input"
    return None


def _items(subpattern: Any) -> Iterator[tuple[Any, Any]]:
    """Every parsed item, depth first."""
    for op, av in subpattern.data:
        yield op, av
        for child in _children(av):
            yield from _items(child)


def _ambiguous_loop(subpattern: Any, in_loop: bool) -> bool:
    for op, av in subpattern.data:
        varies = op in _BACKTRACKING_REPEATS and av[0] != av[1]
        if in_loop and (varies or op == _re_constants.BRANCH):
            return True
        inner = _loop_inside(op, av, in_loop)
        if any(_ambiguous_loop(child, inner) for child in _children(av)):
            return True
    return False


def _loop_inside(op: Any, av: Any, in_loop: bool) -> bool:
    """Whether the parts inside item (op, av) may be matched again by backtracking."""
    if op in _ATOMIC:
        return False
    return in_loop or (op in _BACKTRACKING_REPEATS and av[1] > 1)


def _ways(subpattern: Any) -> int:
    """How many ways the repeats in `subpattern` can share out one stretch of text."""
    total = 1
    for op, av in subpattern.data:
        if op == _re_constants.BRANCH:  # alternatives are tried one after another
            total *= sum(_ways(alternative) for alternative in av[1])
            continue
        if op in _BACKTRACKING_REPEATS:
            total *= min(av[1] - av[0] + 1, MAX_MATCHED_TEST_CHARS)
        for child in _children(av):
            total *= _ways(child)
    return total


def _children(av: Any) -> Iterator[Any]:
    """The sub-patterns in one parsed item's arguments, whatever the item's shape."""
    for item in av if isinstance(av, tuple | list) else (av,):
        if isinstance(item, _re_parser.SubPattern):
            yield item
        elif isinstance(item, list):  # a branch: (None, [alternative, ...])
            yield from (alt for alt in item if isinstance(alt, _re_parser.SubPattern))


def _checked_text(text: str, source: str) -> str:
    if not text.strip():
        raise invalid(source, "text", "is empty", TEXT_EXPECTED)
    if len(text) > MAX_LESSON_TEXT_CHARS:
        raise invalid(source, "text", f"is {len(text):,} characters long", TEXT_EXPECTED)
    return text


def _check(raw: Mapping[str, Any] | None, source: str) -> tuple[tuple[str, ...] | None, int]:
    if raw is None:
        return None, DEFAULT_CHECK_TIMEOUT_S
    run = command_argv(raw["run"], source, "check.run")
    if "timeout" not in raw:
        return run, DEFAULT_CHECK_TIMEOUT_S
    return run, parse_duration(raw["timeout"], source, "check.timeout")
