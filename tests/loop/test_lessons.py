"""Lessons: the documented example parses, bad files give one exact InvalidInput, matching
is whole-word and case-insensitive, and the prompt section is bounded."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.loop.lessons import MAX_PROMPT_SECTION_CHARS, prompt_section, select
from harness.model import yamlutil
from harness.model.lessons import (
    DEFAULT_CHECK_TIMEOUT_S,
    MAX_LESSON_FILE_BYTES,
    MAX_LESSON_TEXT_CHARS,
    MAX_LESSONS,
    MAX_MATCHED_TEST_CHARS,
    Lesson,
    lesson_source,
    load_lessons,
    parse_lesson,
)
from tests.yamledits import DELETE, FUZZ, byte_edits, edited, mutated, with_changes
from tests.yamledits import json_values as json_values_for

NAME = "migrations-need-down"
SOURCE = "lessons/migrations-need-down.yaml"

# The lesson file at the top of docs/specs/lessons.md, comments and all.
DOC_LESSON = """\
version: 1
when:
  keywords: [migration, alembic]            # any one matching is enough
  patterns: ['test_\\w*downgrade']           # regular expressions, case-insensitive
text: |
  Every Alembic migration needs a working downgrade(): write it next to
  upgrade(), never leave it as `pass`, and try the round trip (upgrade,
  downgrade, upgrade) on a scratch database before you finish.
check:                                      # optional
  run: python scripts/check_downgrades.py   # exit 0 = the lesson is applied
  timeout: 2m
"""
SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "lessons.md"
DOC_OBJECTIVE = (
    "Add a nullable due_date column to the invoices table with an Alembic\n"
    "migration, and make tests/test_invoices.py pass.\n"
)

MINIMAL: dict[str, Any] = {
    "version": 1,
    "when": {"keywords": ["migration"]},
    "text": "Write a down step.",
}

COMMAND = "a command: a non-empty string of shell words or a non-empty list of strings"
DURATION = "a duration like 90s, 30m or 4h, or a whole number of seconds, up to 8760h"
KEYWORD = "a word or phrase of at most 100 characters"
PATTERN = "a Python regular expression of at most 500 characters"
SAFE = (
    "a pattern without backreferences, without a repeat or '|' inside a repeat, and with at "
    "most 500,000 ways to split a match (see docs/specs/lessons.md)"
)
TEXT = "what the agent should be told, at most 4,000 characters"
WHEN = "at least 1 and at most 50 keywords and patterns in all"
NAME_RULE = "1 to 63 lowercase letters, digits or '-', starting with a letter or digit, then .yaml"


def lesson_bytes(changes: dict[str, object] | None = None) -> bytes:
    """MINIMAL with dotted-path changes applied (DELETE removes a key), as YAML bytes."""
    return with_changes(MINIMAL, changes)


def parse(data: bytes, name: str = NAME) -> Lesson:
    return parse_lesson(data, lesson_source(name), name)


def message_of(data: bytes, name: str = NAME) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse(data, name)
    assert caught.value.exit_code == 2
    return caught.value.message


def lesson(name: str, text: str = "Do it right.", **when: list[str]) -> Lesson:
    document = {"version": 1, "when": when or {"keywords": ["x"]}, "text": text}
    return parse(yaml.safe_dump(document).encode(), name)


# ---------------------------------------------------------------------------------------
# Valid lessons


def test_documented_example_parses_into_the_typed_lesson() -> None:
    data = DOC_LESSON.encode()
    assert parse(data) == Lesson(
        name=NAME,
        keywords=("migration", "alembic"),
        patterns=(re.compile(r"test_\w*downgrade", re.IGNORECASE),),
        text="Every Alembic migration needs a working downgrade(): write it next to\n"
        "upgrade(), never leave it as `pass`, and try the round trip (upgrade,\n"
        "downgrade, upgrade) on a scratch database before you finish.\n",
        check=("python", "scripts/check_downgrades.py"),
        check_timeout_s=120,
        sha256=hashlib.sha256(data).hexdigest(),
        source=SOURCE,
    )


def test_the_spec_shows_this_lesson_file_and_the_prompt_section_it_gives() -> None:
    spec = SPEC.read_text("utf-8")
    assert f"```yaml\n{DOC_LESSON}```" in spec
    doc = parse(DOC_LESSON.encode())
    given = select([doc, lesson("unrelated", keywords=["payments"])], DOC_OBJECTIVE, None)
    assert given == (doc,)
    assert f"\n\n{prompt_section(given)}```" in spec
    assert "  " + DOC_OBJECTIVE.replace("\n", "\n  ").rstrip() in spec
    failing = "tests/test_migrations.py::test_invoice_downgrade"
    assert doc.match_reason("Speed up login", failing) == (
        "pattern 'test_\\\\w*downgrade' in the failing test"
    )


def test_minimal_lesson_has_no_check_and_no_patterns() -> None:
    parsed = parse(lesson_bytes())
    assert (parsed.keywords, parsed.patterns, parsed.check) == (("migration",), (), None)
    assert parsed.check_timeout_s == DEFAULT_CHECK_TIMEOUT_S == 600


def test_patterns_alone_are_enough() -> None:
    parsed = parse(lesson_bytes({"when": {"patterns": ["alembic"]}}))
    assert parsed.keywords == ()
    assert [pattern.pattern for pattern in parsed.patterns] == ["alembic"]


def test_check_run_as_a_list_is_argv_verbatim_and_a_string_is_shell_words() -> None:
    as_list = parse(lesson_bytes({"check": {"run": ["sh", "-c", "a | b"]}}))
    as_string = parse(lesson_bytes({"check": {"run": "pytest -k 'down and not slow'"}}))
    assert as_list.check == ("sh", "-c", "a | b")
    assert as_string.check == ("pytest", "-k", "down and not slow")


def test_check_timeout_takes_whole_seconds_too() -> None:
    assert parse(lesson_bytes({"check": {"run": "x", "timeout": 45}})).check_timeout_s == 45


def test_keyword_spacing_is_normalised() -> None:
    parsed = parse(lesson_bytes({"when": {"keywords": ["  down \n step "]}}))
    assert parsed.keywords == ("down step",)


def test_sha256_is_of_the_exact_bytes_so_a_comment_edit_changes_it() -> None:
    data = DOC_LESSON.encode()
    edited = data.replace(b"# optional", b"# may be left out")
    assert parse(edited).sha256 == hashlib.sha256(edited).hexdigest() != parse(data).sha256


def test_as_ref_is_what_the_ledger_records() -> None:
    parsed = parse(DOC_LESSON.encode())
    assert parsed.as_ref() == {"name": NAME, "sha256": parsed.sha256}


def test_limits_are_inclusive() -> None:
    text = "x" * MAX_LESSON_TEXT_CHARS
    at_limits: dict[str, object] = {
        "text": text,
        "when": {"keywords": ["k" * 100] + ["w"] * 48, "patterns": ["p" * 500]},
    }
    parsed = parse(lesson_bytes(at_limits))
    assert (parsed.text, len(parsed.keywords), len(parsed.patterns)) == (text, 49, 1)


def test_file_of_exactly_the_size_limit_is_accepted() -> None:
    data = lesson_bytes()
    data += b"#" * (MAX_LESSON_FILE_BYTES - len(data) - 1) + b"\n"
    assert len(data) == MAX_LESSON_FILE_BYTES
    assert parse(data).name == NAME


def test_schema_is_valid_draft_2020_12() -> None:
    import jsonschema  # type: ignore[import-untyped]

    jsonschema.Draft202012Validator.check_schema(yamlutil.load_schema("lesson.schema.json"))


# ---------------------------------------------------------------------------------------
# Bad lesson files: one table per layer, the exact message for each


SCHEMA_CASES: list[tuple[dict[str, object], str]] = [
    ({"foo": 1}, "unknown key 'foo' (expected one of version, when, text, check)"),
    ({"when.words": ["a"]}, "when: unknown key 'words' (expected one of keywords, patterns)"),
    (
        {"check": {"run": "x", "env": {}}},
        "check: unknown key 'env' (expected one of run, timeout, enforce)",
    ),
    ({"version": DELETE}, "version: required key is missing (expected 1)"),
    (
        {"when": DELETE},
        "when: required key is missing (expected a mapping with keywords, patterns or both)",
    ),
    ({"text": DELETE}, f"text: required key is missing (expected {TEXT})"),
    ({"check": {"timeout": "1m"}}, f"check.run: required key is missing (expected {COMMAND})"),
    ({"version": 2}, "version: 2 is not supported (expected 1)"),
    ({"version": "1"}, "version: got a string '1' (expected 1)"),
    ({"version": True}, "version: got a boolean true (expected 1)"),
    ({"when": None}, "when: no value (expected a mapping with keywords, patterns or both)"),
    ({"when": ["migration"]}, "when: got a list (expected a mapping with keywords, patterns or"),
    (
        {"when.keywords": "migration"},
        "when.keywords: got a string 'migration' (expected a list of words or phrases)",
    ),
    ({"when.keywords": ["a", 5]}, "when.keywords[1]: got a whole number 5 (expected a word or"),
    ({"when.keywords": [""]}, "when.keywords[0]: got an empty string (expected a word or phrase)"),
    ({"when.keywords": [None]}, "when.keywords[0]: no value (expected a word or phrase)"),
    (
        {"when.patterns": "a.*b"},
        "when.patterns: got a string 'a.*b' (expected a list of Python regular expressions)",
    ),
    (
        {"when.patterns": [True]},
        "when.patterns[0]: got a boolean true (expected a Python regular expression)",
    ),
    ({"text": ["a"]}, f"text: got a list (expected {TEXT})"),
    ({"text": 5}, f"text: got a whole number 5 (expected {TEXT})"),
    ({"text": None}, f"text: no value (expected {TEXT})"),
    ({"check": None}, "check: no value (expected the check: a mapping with run and an optional"),
    ({"check": "alembic check"}, "check: got a string 'alembic check' (expected the check: a"),
    ({"check": {"run": ""}}, f"check.run: got an empty string (expected {COMMAND})"),
    ({"check": {"run": []}}, f"check.run: got an empty list (expected {COMMAND})"),
    ({"check": {"run": ["a", 1]}}, "check.run[1]: got a whole number 1 (expected a non-empty"),
    (
        {"check": {"run": "x", "timeout": 1.5}},
        f"check.timeout: got a number 1.5 (expected {DURATION})",
    ),
    # The shallowest problem wins: a misspelt key is named before what it left missing.
    ({"text": DELETE, "txet": "x"}, "unknown key 'txet' (expected one of"),
]


@pytest.mark.parametrize(("changes", "expected"), SCHEMA_CASES)
def test_schema_violation_names_file_key_and_expectation(
    changes: dict[str, object], expected: str
) -> None:
    assert message_of(lesson_bytes(changes)).startswith(f"{SOURCE}: {expected}")


SEMANTIC_CASES: list[tuple[dict[str, object], str]] = [
    ({"when": {}}, f"when: has no keywords and no patterns (expected {WHEN})"),
    (
        {"when": {"keywords": [], "patterns": []}},
        f"when: has no keywords and no patterns (expected {WHEN})",
    ),
    (
        {"when": {"keywords": ["a"] * 30, "patterns": ["b"] * 21}},
        f"when: has 51 keywords and patterns (expected {WHEN})",
    ),
    ({"when.keywords": ["ok", " \n "]}, f"when.keywords[1]: is blank (expected {KEYWORD})"),
    (
        {"when.keywords": ["k" * 101]},
        f"when.keywords[0]: is 101 characters long (expected {KEYWORD})",
    ),
    (
        {"when.patterns": ["p" * 501]},
        f"when.patterns[0]: is 501 characters long (expected {PATTERN})",
    ),
    (
        {"when.patterns": ["ok", "(unclosed"]},
        "when.patterns[1]: '(unclosed' does not compile: missing ), unterminated subpattern "
        f"at position 0 (expected {PATTERN})",
    ),
    ({"when.patterns": ["*x"]}, "when.patterns[0]: '*x' does not compile: nothing to repeat at"),
    (
        {"when.patterns": ["a{99999999999}"]},
        "when.patterns[0]: 'a{99999999999}' does not compile: the repetition number is too large",
    ),
    ({"when.patterns": ["a(?i)b"]}, "when.patterns[0]: 'a(?i)b' does not compile: global flags"),
    ({"when.patterns": ["(?P<x>a)(?P<x>b)"]}, "when.patterns[0]: '(?P<x>a)(?P<x>b)' does not"),
    (
        {"when.patterns": ["\\p{L}"]},
        "when.patterns[0]: '\\\\p{L}' does not compile: bad escape \\p",
    ),
    (
        {"when.patterns": ["(a+)+$"]},
        "when.patterns[0]: '(a+)+$' has a repeat or '|' inside a repeat, which can take "
        f"exponential time (expected {SAFE})",
    ),
    ({"when.patterns": ["(\\w+\\s?)*x"]}, "when.patterns[0]: '(\\\\w+\\\\s?)*x' has a repeat or"),
    ({"when.patterns": ["(?:a|a)*!"]}, "when.patterns[0]: '(?:a|a)*!' has a repeat or '|' inside"),
    ({"when.patterns": ["(?:foo|bar)+"]}, "when.patterns[0]: '(?:foo|bar)+' has a repeat or"),
    ({"when.patterns": ["(?:a?a)+"]}, "when.patterns[0]: '(?:a?a)+' has a repeat or '|' inside"),
    ({"when.patterns": ["(?:\\.\\w+)+"]}, "when.patterns[0]: '(?:\\\\.\\\\w+)+' has a repeat"),
    ({"when.patterns": ["((?:x.*)y)+?"]}, "when.patterns[0]: '((?:x.*)y)+?' has a repeat or"),
    ({"when.patterns": ["(?>(a*)*)"]}, "when.patterns[0]: '(?>(a*)*)' has a repeat or '|' inside"),
    ({"when.patterns": ["(x{1,3}){2,}"]}, "when.patterns[0]: '(x{1,3}){2,}' has a repeat or"),
    (
        {"when.patterns": ["(.*)\\1"]},
        f"when.patterns[0]: '(.*)\\\\1' uses a backreference, which can be very slow (expected {SAFE})",
    ),
    ({"when.patterns": ["(?P<x>a)(?P=x)"]}, "when.patterns[0]: '(?P<x>a)(?P=x)' uses a backref"),
    (
        {"when.patterns": ["\\w*\\w*\\w*!"]},
        "when.patterns[0]: '\\\\w*\\\\w*\\\\w*!' has repeats that can split a match in more "
        f"than 500,000 ways, which can be very slow on a long input (expected {SAFE})",
    ),
    ({"when.patterns": ["a.*b.*c?d?"]}, "when.patterns[0]: 'a.*b.*c?d?' has repeats that can"),
    ({"when.patterns": ["a{1,100}b{1,100}c{1,100}"]}, "when.patterns[0]: 'a{1,100}b{1,100}c{1,"),
    ({"when.patterns": ["x" + "y?" * 19]}, "when.patterns[0]: 'xy?y?y?y?y?y?y?y?y?y?y?y?y?y?y?"),
    ({"when.patterns": ["(?:.*|x)(?:.*|y)z?"]}, "when.patterns[0]: '(?:.*|x)(?:.*|y)z?' has"),
    ({"text": ""}, f"text: is empty (expected {TEXT})"),
    ({"text": " \n\t"}, f"text: is empty (expected {TEXT})"),
    ({"text": "x" * 4_001}, f"text: is 4,001 characters long (expected {TEXT})"),
    (
        {"check": {"run": "alembic 'check"}},
        f"check.run: cannot split into shell words: No closing quotation (expected {COMMAND})",
    ),
    ({"check": {"run": "   "}}, f"check.run: has no words (expected {COMMAND})"),
    ({"check": {"run": ["a", "b\x00"]}}, "check.run[1]: contains a NUL character"),
    (
        {"check": {"run": "x", "timeout": "soon"}},
        f"check.timeout: 'soon' is not a duration (expected {DURATION})",
    ),
    ({"check": {"run": "x", "timeout": "0s"}}, "check.timeout: '0s' is not greater than 0"),
    ({"check": {"run": "x", "timeout": "9000h"}}, "check.timeout: '9000h' is longer than 8760h"),
]


@pytest.mark.parametrize(("changes", "expected"), SEMANTIC_CASES)
def test_semantic_error_names_file_key_and_problem(
    changes: dict[str, object], expected: str
) -> None:
    assert message_of(lesson_bytes(changes)).startswith(f"{SOURCE}: {expected}")


@pytest.mark.parametrize(
    "pattern",
    [
        "(a++)+",
        "(?:ab{2})+",
        "(?:test_)+login",
        "(?:foo|bar)++",
        "(?>foo|bar)+",
        "(?:(?=a|b)c)+",
        "(?:https?://)?example",
        "migrat(?:e|ion)s?",
        "[a-z]+_timeout",
        "(\\w|-)+",
        "^fix .*login.*timeouts?",
        "a.*b" + "c?" * 9,
        "(?(1)a|b)(x)?",
    ],
)
def test_patterns_that_cannot_backtrack_for_long_are_accepted(pattern: str) -> None:
    assert parse(lesson_bytes({"when.patterns": [pattern]})).patterns[0].pattern == pattern


@pytest.mark.parametrize(
    ("changes", "reported"),
    [
        ({"when": {"keywords": [" "], "patterns": ["("]}}, "when.keywords[0]:"),
        ({"when.patterns": ["("], "text": ""}, "when.patterns[0]:"),
        ({"text": "", "check": {"run": "'"}}, "text:"),
        ({"check": {"run": "'", "timeout": "x"}}, "check.run:"),
    ],
)
def test_semantic_checks_run_in_documented_order(changes: dict[str, object], reported: str) -> None:
    assert message_of(lesson_bytes(changes)).startswith(f"{SOURCE}: {reported}")


FILE_CASES: list[tuple[bytes, str]] = [
    (b"", "file is empty (expected a mapping of keys to values)"),
    (b"# only a comment\n", "file is empty (expected a mapping of keys to values)"),
    (b"- a\n- b\n", "top level is a list (expected a mapping of keys to values)"),
    (b"text: x\ntext: y\n", "line 2: duplicate key 'text', first on line 1"),
    (b"a: &x 1\nb: *x\n", "line 2: aliases (*name) are not allowed"),
    (b"text: \xff\n", "line 1: byte 0xff at offset 6 is not UTF-8 (expected UTF-8 text)"),
    (b"when: [\n", "line 2: while parsing a flow node, expected the node content, but found"),
]


@pytest.mark.parametrize(("data", "expected"), FILE_CASES)
def test_unreadable_file_names_the_file_and_line(data: bytes, expected: str) -> None:
    assert message_of(data).startswith(f"{SOURCE}: {expected}")


def test_file_over_the_size_limit_is_refused_before_parsing() -> None:
    data = b"#" * (MAX_LESSON_FILE_BYTES + 1)
    assert message_of(data) == f"{SOURCE}: file is 65,537 bytes (expected at most 65,536 bytes)"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Bad", "lessons/Bad.yaml: 'Bad' is not a valid lesson name"),
        ("-x", "lessons/-x.yaml: '-x' is not a valid lesson name"),
        ("a_b", "lessons/a_b.yaml: 'a_b' is not a valid lesson name"),
        ("x.yml", "lessons/x.yml.yaml: 'x.yml' is not a valid lesson name"),
        ("", "lessons/.yaml: '' is not a valid lesson name"),
        ("a" * 64, f"lessons/{'a' * 64}.yaml: '{'a' * 57}'... is not a valid lesson name"),
        ("a\nb", "lessons/'a\\nb'.yaml: 'a\\nb' is not a valid lesson name"),
    ],
)
def test_bad_lesson_name_is_refused_in_one_line(name: str, expected: str) -> None:
    message = message_of(lesson_bytes(), name)
    assert message == f"{expected} (expected {NAME_RULE})"
    assert "\n" not in message


# ---------------------------------------------------------------------------------------
# load_lessons


def test_load_lessons_parses_every_file_and_sorts_by_name() -> None:
    files = {"zeta": lesson_bytes(), "alpha": DOC_LESSON.encode(), "mid-1": lesson_bytes()}
    loaded = load_lessons(files)
    assert [item.name for item in loaded] == ["alpha", "mid-1", "zeta"]
    assert [item.source for item in loaded] == [
        "lessons/alpha.yaml",
        "lessons/mid-1.yaml",
        "lessons/zeta.yaml",
    ]


def test_load_lessons_of_nothing_is_empty() -> None:
    assert load_lessons({}) == ()


def test_load_lessons_names_the_first_bad_file_by_name() -> None:
    files = {"b-bad": b"version: 2\n", "a-bad": b"text: [\n", "c": lesson_bytes()}
    with pytest.raises(InvalidInput, match=r"^lessons/a-bad\.yaml: line 2: "):
        load_lessons(files)


def test_load_lessons_refuses_more_than_the_limit() -> None:
    files = {f"l{index}": lesson_bytes() for index in range(MAX_LESSONS + 1)}
    with pytest.raises(InvalidInput) as caught:
        load_lessons(files)
    assert caught.value.message == "lessons/: holds 201 lesson files (expected at most 200)"
    assert len(load_lessons(dict(list(files.items())[:MAX_LESSONS]))) == MAX_LESSONS


# ---------------------------------------------------------------------------------------
# Matching

MIGRATION = lesson("m", keywords=["migration", "down step"])
TIMEOUT = lesson("t", patterns=[r"test_\w+_timeout\b", r"^Fix .*login"])

MATCH_CASES: list[tuple[Lesson, str, str | None, bool]] = [
    (MIGRATION, "Add a migration for the users table", None, True),
    (MIGRATION, "Add a MIGRATION", None, True),
    (MIGRATION, "Add a Migration.", None, True),
    (MIGRATION, "(migration)", None, True),
    (MIGRATION, "down-migration", None, True),
    (MIGRATION, "migrations", None, False),  # whole words only
    (MIGRATION, "premigration checks", None, False),
    (MIGRATION, "migration2", None, False),
    (MIGRATION, "nothing here", "tests/test_db.py::test_migration_runs", True),  # `_` separates
    (MIGRATION, "nothing here", "tests/test_migrations.py::test_x", False),
    (MIGRATION, "add a\n  DOWN\tstep", None, True),  # a phrase spans any spacing
    (MIGRATION, "add a downstep", None, False),
    (MIGRATION, "nothing here", None, False),
    (MIGRATION, "nothing here", "", False),
    (TIMEOUT, "x", "tests/test_login.py::test_login_timeout", True),
    (TIMEOUT, "x", "tests/test_login.py::TEST_LOGIN_TIMEOUT", True),  # case-insensitive
    (TIMEOUT, "x", "tests/test_login.py::test_login_timeouts", False),
    (TIMEOUT, "test_login_timeout appears in the objective", None, True),
    (TIMEOUT, "fix the slow login", None, True),  # ^ anchors at the objective's start
    (TIMEOUT, "Please fix the slow login", None, False),
    (TIMEOUT, "x", "Fix the login", True),
]


@pytest.mark.parametrize(("item", "objective", "failing_test", "expected"), MATCH_CASES)
def test_matches(item: Lesson, objective: str, failing_test: str | None, expected: bool) -> None:
    assert item.matches(objective, failing_test) is expected


def test_a_pattern_does_not_span_the_objective_and_the_failing_test() -> None:
    spanning = lesson("s", patterns=["alpha.*omega"])
    assert not spanning.matches("alpha", "omega")
    assert spanning.matches("alpha and omega", None)


def test_keyword_in_any_script_matches_case_insensitively() -> None:
    unicode_word = lesson("u", keywords=["Straße", "ΔΟΚΙΜΗ"])
    assert unicode_word.matches("fix the STRASSE parser", None)
    assert unicode_word.matches("μια δοκιμη", None)
    assert not unicode_word.matches("δοκιμηs", None)


def test_only_the_start_of_a_long_failing_test_is_matched() -> None:
    tail = lesson("tail", keywords=["needle"])
    prefix = "x" * (MAX_MATCHED_TEST_CHARS - len(" needle"))
    assert tail.matches("o", prefix + " needle")
    assert not tail.matches("o", prefix + "  needle")


def test_match_reason_names_what_matched_and_where() -> None:
    assert MIGRATION.match_reason("a Migration", None) == "keyword 'migration' in the objective"
    assert (
        TIMEOUT.match_reason("x", "test_a_timeout")
        == "pattern 'test_\\\\w+_timeout\\\\b' in the failing test"
    )
    assert MIGRATION.match_reason("x", "y") is None


def test_matching_a_long_agent_chosen_test_id_stays_fast() -> None:
    # Among the slowest patterns parse_lesson still accepts.
    slow = lesson("slow", patterns=[r"\w*\w*\w?!", r"\w*?\w{1,500}!"])
    started = time.monotonic()
    assert not slow.matches("o", "a" * 100_000)
    # Not a speed measurement (scripts/bench has those): backtracking that is exponential in
    # the id's length would take hours; 30 s stays clear of a loaded machine's noise.
    assert time.monotonic() - started < 30


# ---------------------------------------------------------------------------------------
# select and prompt_section


def test_select_keeps_matching_lessons_in_name_order() -> None:
    lessons = [
        lesson("zz-last", keywords=["login"]),
        lesson("aa-first", patterns=["timeout$"]),
        lesson("mm-never", keywords=["payments"]),
        lesson("bb-test", keywords=["flaky"]),
    ]
    chosen = select(lessons, "Fix the login timeout", "tests/test_x.py::test_flaky")
    assert [item.name for item in chosen] == ["aa-first", "bb-test", "zz-last"]
    assert select(lessons, "nothing", None) == ()
    assert select([], "Fix the login", None) == ()


def test_select_gives_only_what_fits_in_the_prompt() -> None:
    big = [lesson(f"l{index:02}", "x" * MAX_LESSON_TEXT_CHARS) for index in range(6)]
    chosen = select(big, "x", None)
    assert [item.name for item in chosen] == ["l00", "l01", "l02"]
    section = prompt_section(chosen)
    assert len(section) <= MAX_PROMPT_SECTION_CHARS
    assert "left out" not in section


def test_prompt_section_lists_each_lesson_with_its_check() -> None:
    doc = parse(DOC_LESSON.encode())
    other = lesson("a-simple", "One line.\n\n\nAfter blank lines.\n")
    assert prompt_section([other, doc]) == (
        "Lessons from this team:\n"
        "- a-simple: One line.\n"
        "\n"
        "\n"
        "  After blank lines.\n"
        "- migrations-need-down: Every Alembic migration needs a working downgrade(): "
        "write it next to\n"
        "  upgrade(), never leave it as `pass`, and try the round trip (upgrade,\n"
        "  downgrade, upgrade) on a scratch database before you finish.\n"
        "  Checked when you are done: `python scripts/check_downgrades.py` must pass.\n"
    )


def test_prompt_section_of_no_lessons_is_empty() -> None:
    assert prompt_section([]) == ""


def test_prompt_section_is_bounded_and_says_how_many_were_left_out() -> None:
    big = [lesson(f"l{index:02}", "y" * MAX_LESSON_TEXT_CHARS) for index in range(40)]
    section = prompt_section(big)
    assert len(section) <= MAX_PROMPT_SECTION_CHARS
    assert section.count("\n- l") == 3
    assert section.endswith("\n(37 more matching lessons were left out for length.)\n")


def test_prompt_section_cuts_a_very_long_check_command() -> None:
    data = lesson_bytes({"check": {"run": ["check"] + ["--flag"] * 5000}})
    section = prompt_section([parse(data)])
    line = section.splitlines()[-1]
    assert line.startswith("  Checked when you are done: `check --flag --flag")
    assert line.endswith("…` must pass.")
    assert len(line) < 260


# ---------------------------------------------------------------------------------------
# Fuzz: whatever the bytes, the only failure is one InvalidInput line naming the file


def assert_only_invalid_input(data: bytes) -> None:
    try:
        parsed = parse(data)
    except InvalidInput as exc:
        assert exc.message.startswith(f"{SOURCE}: ")
        assert "\n" not in exc.message and "\r" not in exc.message
    else:
        assert parsed.sha256 == hashlib.sha256(data).hexdigest()
        parsed.matches("a migration objective", "tests/test_x.py::test_down")
        assert len(prompt_section([parsed])) <= MAX_PROMPT_SECTION_CHARS


json_values = json_values_for("2m", "0s", "(", "(a+)+", "a{999999999999}", "\\", "[", "a\x00b")
key_paths = st.sampled_from(
    [
        "version",
        "when",
        "when.keywords",
        "when.patterns",
        "text",
        "check",
        "check.run",
        "check.timeout",
        "extra",
    ]
)
regex_texts = st.text(alphabet="ab()[]{}*+?|\\^$.,0123456789-:<>=!?PpiLx", max_size=40)


@FUZZ
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes_give_only_invalid_input(data: bytes) -> None:
    assert_only_invalid_input(data)


@FUZZ
@given(st.dictionaries(key_paths, json_values | st.just(DELETE), min_size=1, max_size=4))
def test_fuzz_mutated_valid_lesson_gives_only_invalid_input(changes: dict[str, object]) -> None:
    assert_only_invalid_input(mutated(DOC_LESSON, changes))


@FUZZ
@given(st.lists(regex_texts, min_size=1, max_size=3))
def test_fuzz_random_patterns_give_only_invalid_input(patterns: list[str]) -> None:
    assert_only_invalid_input(lesson_bytes({"when.patterns": patterns}))


@FUZZ
@given(byte_edits(DOC_LESSON))
def test_fuzz_byte_edits_of_the_documented_lesson_give_only_invalid_input(
    edits: list[tuple[int, bytes, int]],
) -> None:
    assert_only_invalid_input(edited(DOC_LESSON, edits))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab()*+?|{},0123456789:.\\w", max_size=30))
def test_fuzz_accepted_patterns_search_a_long_agent_chosen_test_id_quickly(text: str) -> None:
    try:
        parsed = parse(lesson_bytes({"when.patterns": [text]}))
    except InvalidInput:
        return
    # This process's CPU time: a backtracking pattern spends it here, while load from other
    # processes (the suite's own workers) stretches only the wall clock.
    started = time.process_time()
    for test_id in ("a" * 10_000, "ab" * 5_000, "aab" * 3_000 + "!"):
        parsed.matches("o", test_id)
    assert time.process_time() - started < 3
