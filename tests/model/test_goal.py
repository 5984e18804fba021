"""Goal files: the contract's example parses, and every bad input is one exact InvalidInput."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.model import yamlutil
from harness.model.config import DEFAULT_CONFIG
from harness.model.goal import (
    MAX_OBJECTIVE_CHARS,
    BuildSpec,
    Goal,
    JudgeSpec,
    StepSpec,
    load_goal,
    parse_goal,
)
from harness.model.goalid import MAX_GOAL_FILE_BYTES, check_goal_id
from harness.model.limits import Budget, Defaults, Halt, parse_duration
from tests.yamledits import DELETE, FUZZ, byte_edits, edited, mutated, with_changes
from tests.yamledits import json_values as json_values_for

SOURCE = "goals/fix-login-timeout.yaml"
GOAL_ID = "fix-login-timeout"
DEFAULTS = DEFAULT_CONFIG.defaults

# The contract's example goal file, comments and all.
CONTRACT_GOAL = """\
version: 1
id: fix-login-timeout
owner: alice@example.com          # a principal in .harness/owners
objective: |                      # at most 32,000 characters
  Make tests/test_login.py pass without changing the public API.
build:                            # the implementing agent (required)
  run: claude -p --output-format json   # string (shell words) or list
  timeout: 30m                    # durations: 90s, 30m, 4h
  format: claude-json             # plain (default), claude-json, codex-jsonl, aider
judge:                            # the verification (required); exit 0 = pass
  run: pytest -q tests/test_login.py
  timeout: 10m
  junit: reports/junit.xml        # optional: failing test ids are read from here
review:                           # optional, read-only; exit 0 = pass, stdout = findings
  run: ./scripts/review.sh
plan:                             # optional, read-only; stdout goes into the first build prompt
  run: ./scripts/plan.sh
ship:                             # optional; runs only after a signed ship decision
  run: git push origin HEAD:refs/heads/feature/login-timeout
budget:                           # all optional; defaults in config; every limit > 0
  max_iterations: 3               # build→judge rounds (first build + 2 repairs)
  max_seconds: 2h                 # agent wall time, cumulative
  max_cost_usd: 20
  max_turns: 300
halt:
  no_progress_passes: 2           # same failing test and same tree this many times: stop
  max_passes: 50                  # hard ceiling on steps over the goal's life
expect:
  files: [src/login.py]           # must exist at the done gate
"""

MINIMAL: dict[str, Any] = {
    "version": 1,
    "id": GOAL_ID,
    "owner": "alice@example.com",
    "objective": "Make tests/test_login.py pass.",
    "build": {"run": "claude -p"},
    "judge": {"run": "pytest -q"},
}

COMMAND = "a command: a non-empty string of shell words or a non-empty list of strings"
DURATION = "a duration like 90s, 30m or 4h, or a whole number of seconds, up to 8760h"
COUNT = "a whole number from 1 to 1000000000"
COST = "a number of US dollars greater than 0 and at most 1000000000"
REL_PATH = "a relative path inside the repository, without '..'"
TOP_KEYS = "version, id, owner, objective, build, judge, review, plan, ship, budget, halt, expect, every, lifetime"


def goal_bytes(changes: dict[str, object] | None = None) -> bytes:
    """MINIMAL with dotted-path changes applied (DELETE removes a key), as YAML bytes."""
    return with_changes(MINIMAL, changes)


def parse(data: bytes, expected_id: str = GOAL_ID, **kwargs: Any) -> Goal:
    return parse_goal(data, SOURCE, expected_id, DEFAULTS, **kwargs)


def message_of(data: bytes, expected_id: str = GOAL_ID, **kwargs: Any) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse(data, expected_id, **kwargs)
    assert caught.value.exit_code == 2
    return caught.value.message


# ---------------------------------------------------------------------------------------
# Valid goals


def test_contract_example_parses_into_the_typed_goal() -> None:
    data = CONTRACT_GOAL.encode()
    assert parse(data) == Goal(
        id="fix-login-timeout",
        owner="alice@example.com",
        objective="Make tests/test_login.py pass without changing the public API.\n",
        build=BuildSpec(
            run=("claude", "-p", "--output-format", "json"), timeout_s=1800, format="claude-json"
        ),
        judge=JudgeSpec(
            run=("pytest", "-q", "tests/test_login.py"), timeout_s=600, junit="reports/junit.xml"
        ),
        review=StepSpec(run=("./scripts/review.sh",), timeout_s=600),
        plan=StepSpec(run=("./scripts/plan.sh",), timeout_s=600),
        ship=StepSpec(
            run=("git", "push", "origin", "HEAD:refs/heads/feature/login-timeout"), timeout_s=600
        ),
        budget=Budget(max_iterations=3, max_seconds=7200, max_cost_usd=20.0, max_turns=300),
        halt=Halt(no_progress_passes=2, max_passes=50),
        expect_files=("src/login.py",),
        sha256=hashlib.sha256(data).hexdigest(),
        source=SOURCE,
    )


def test_sha256_is_of_the_exact_bytes_so_a_comment_edit_changes_it() -> None:
    data = CONTRACT_GOAL.encode()
    edited = data.replace(b"# a principal", b"# the principal")
    assert parse(data).sha256 == hashlib.sha256(data).hexdigest()
    assert parse(edited).sha256 == hashlib.sha256(edited).hexdigest() != parse(data).sha256


def test_minimal_goal_takes_every_default() -> None:
    goal = parse(goal_bytes())
    assert goal.build == BuildSpec(run=("claude", "-p"), timeout_s=1800, format="plain")
    assert goal.judge == JudgeSpec(run=("pytest", "-q"), timeout_s=600, junit=None)
    assert (goal.review, goal.plan, goal.ship) == (None, None, None)
    assert goal.budget == DEFAULTS.budget
    assert goal.halt == DEFAULTS.halt
    assert goal.expect_files == ()


def test_defaults_come_from_the_defaults_passed_in() -> None:
    defaults = Defaults(
        budget=Budget(max_iterations=7, max_seconds=60, max_cost_usd=1.5, max_turns=9),
        halt=Halt(no_progress_passes=4, max_passes=8),
        timeouts=MappingProxyType({"build": 11, "judge": 12, "review": 13, "plan": 14, "ship": 15}),
    )
    data = goal_bytes({"review": {"run": "r"}, "plan": {"run": "p"}, "ship": {"run": "s"}})
    goal = parse_goal(data, SOURCE, GOAL_ID, defaults)
    steps = (goal.build, goal.judge, goal.review, goal.plan, goal.ship)
    assert [step.timeout_s if step else None for step in steps] == [11, 12, 13, 14, 15]
    assert (goal.budget, goal.halt) == (defaults.budget, defaults.halt)


def test_budget_keys_given_override_only_themselves() -> None:
    goal = parse(goal_bytes({"budget": {"max_cost_usd": 2.5}, "halt": {"max_passes": 7}}))
    assert goal.budget == Budget(
        max_iterations=3, max_seconds=7200, max_cost_usd=2.5, max_turns=300
    )
    assert goal.halt == Halt(no_progress_passes=2, max_passes=7)


def test_halt_reads_the_unavailable_tries_and_backoff() -> None:
    goal = parse(goal_bytes({"halt": {"unavailable_tries": 5, "unavailable_backoff": "2m"}}))
    assert goal.halt == Halt(2, 50, unavailable_tries=5, unavailable_backoff_s=120)
    # Each failed try in a row waits twice as long as the one before, up to a year.
    assert [goal.halt.backoff_s(n) for n in (1, 2, 3, 4)] == [120, 240, 480, 960]
    assert goal.halt.backoff_s(10**9) == 365 * 24 * 3600
    assert parse(goal_bytes()).halt.unavailable_tries == 3
    assert parse(goal_bytes()).halt.unavailable_backoff_s == 300


def test_halt_unavailable_backoff_must_be_a_duration() -> None:
    message = message_of(goal_bytes({"halt": {"unavailable_backoff": "soon"}}))
    assert message == (
        f"{SOURCE}: halt.unavailable_backoff: 'soon' is not a duration (expected {DURATION})"
    )


def test_run_as_a_list_is_argv_verbatim() -> None:
    goal = parse(goal_bytes({"build.run": ["sh", "-c", "echo $HOME; rm -rf x"]}))
    assert goal.build.run == ("sh", "-c", "echo $HOME; rm -rf x")


def test_run_as_a_string_is_split_into_shell_words_without_a_shell() -> None:
    goal = parse(goal_bytes({"judge.run": "pytest -k 'login and not slow' $X; echo"}))
    assert goal.judge.run == ("pytest", "-k", "login and not slow", "$X;", "echo")


def test_integer_timeout_is_seconds() -> None:
    assert parse(goal_bytes({"build.timeout": 45})).build.timeout_s == 45


def test_owner_listed_in_owners_is_accepted() -> None:
    goal = parse(goal_bytes(), owner_principals={"bob@x", "alice@example.com"})
    assert goal.owner == "alice@example.com"


def test_objective_of_exactly_the_limit_is_accepted() -> None:
    objective = "x" * MAX_OBJECTIVE_CHARS
    assert parse(goal_bytes({"objective": objective})).objective == objective


def test_file_of_exactly_the_size_limit_is_accepted() -> None:
    data = goal_bytes()
    data += b"#" * (MAX_GOAL_FILE_BYTES - len(data) - 1) + b"\n"
    assert len(data) == MAX_GOAL_FILE_BYTES
    assert parse(data).id == GOAL_ID


def test_load_goal_reads_the_file_and_takes_the_id_from_its_stem(tmp_path: Path) -> None:
    path = tmp_path / "fix-login-timeout.yaml"
    path.write_bytes(CONTRACT_GOAL.encode())
    assert load_goal(path, SOURCE, DEFAULTS) == parse(CONTRACT_GOAL.encode())
    renamed = tmp_path / "other.yaml"
    path.rename(renamed)
    with pytest.raises(InvalidInput, match="does not match the file name \\(expected 'other'\\)"):
        load_goal(renamed, "goals/other.yaml", DEFAULTS)


def test_load_goal_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_goal(tmp_path / "gone.yaml", "goals/gone.yaml", DEFAULTS)
    assert (
        caught.value.message == "goals/gone.yaml: cannot read the file: No such file or directory"
    )


def test_load_goal_refuses_a_huge_file_naming_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * 3_000_000)
    with pytest.raises(InvalidInput) as caught:
        load_goal(path, "goals/big.yaml", DEFAULTS)
    expected = "goals/big.yaml: file is 3,000,000 bytes (expected at most 262,144 bytes)"
    assert caught.value.message == expected


def test_budget_as_dict_uses_the_state_cell_names() -> None:
    budget = Budget(max_iterations=3, max_seconds=7200, max_cost_usd=20.0, max_turns=300)
    assert budget.as_dict() == {"iterations": 3, "seconds": 7200, "cost_usd": 20.0, "turns": 300}


# ---------------------------------------------------------------------------------------
# Schema violations: one table, the exact message for each


SCHEMA_CASES: list[tuple[dict[str, object], str]] = [
    ({"foo": 1}, f"unknown key 'foo' (expected one of {TOP_KEYS})"),
    ({"build.foo": 1}, "build: unknown key 'foo' (expected one of run, timeout, format, network)"),
    (
        {"judge.format": "plain"},
        "judge: unknown key 'format' (expected one of run, timeout, junit, network)",
    ),
    ({"review": {"run": "r", "junit": "x"}}, "review: unknown key 'junit'"),
    ({"budget.max_cost": 1}, "budget: unknown key 'max_cost' (expected one of max_iterations,"),
    (
        {"halt.max": 1},
        "halt: unknown key 'max' (expected one of no_progress_passes, max_passes, "
        "unavailable_tries, unavailable_backoff, stale_after, on_denied_egress)",
    ),
    ({"expect.dirs": []}, "expect: unknown key 'dirs' (expected one of files, globs)"),
    ({"version": DELETE}, "version: required key is missing (expected 1)"),
    ({"id": DELETE}, "id: required key is missing (expected the goal id, equal to the file"),
    ({"owner": DELETE}, "owner: required key is missing (expected a principal listed in"),
    ({"objective": DELETE}, "objective: required key is missing (expected what the goal must"),
    ({"build": DELETE}, "build: required key is missing (expected the build step: a mapping"),
    (
        {"judge": DELETE},
        "judge: required key is missing "
        "(expected the judge step: a mapping with run, and optional timeout, junit and network)",
    ),
    ({"build.run": DELETE}, f"build.run: required key is missing (expected {COMMAND})"),
    ({"review": {"timeout": "5m"}}, "review.run: required key is missing"),
    ({"version": 2}, "version: 2 is not supported (expected 1)"),
    ({"version": "1"}, "version: got a string '1' (expected 1)"),
    ({"version": 1.0}, "version: got a number 1.0 (expected 1)"),
    ({"version": True}, "version: got a boolean true (expected 1)"),
    (
        {"build.format": "json"},
        "build.format: 'json' is not supported "
        "(expected one of plain, claude-json, codex-jsonl, aider)",
    ),
    ({"build.run": ""}, f"build.run: got an empty string (expected {COMMAND})"),
    ({"build.run": []}, f"build.run: got an empty list (expected {COMMAND})"),
    ({"build.run": {"a": 1}}, f"build.run: got a mapping (expected {COMMAND})"),
    ({"build.run": None}, f"build.run: no value (expected {COMMAND})"),
    ({"judge.run": ["ok", 5]}, "judge.run[1]: got a whole number 5 (expected a non-empty string"),
    ({"judge.run": ["ok", ""]}, "judge.run[1]: got an empty string (expected a non-empty string"),
    ({"build": "claude"}, "build: got a string 'claude' (expected the build step: a mapping"),
    ({"build": None}, "build: no value (expected the build step"),
    ({"ship": ["git", "push"]}, "ship: got a list (expected a step: a mapping with run"),
    ({"id": 123}, "id: got a whole number 123 (expected the goal id"),
    ({"owner": ""}, "owner: got an empty string (expected a principal listed in .harness/owners)"),
    ({"owner": ["a"]}, "owner: got a list"),
    ({"objective": ["a"]}, "objective: got a list (expected what the goal must achieve"),
    ({"budget.max_iterations": 0}, f"budget.max_iterations: 0 is too small (expected {COUNT})"),
    ({"budget.max_iterations": -1}, f"budget.max_iterations: -1 is too small (expected {COUNT})"),
    ({"budget.max_iterations": 2.5}, f"budget.max_iterations: got a number 2.5 (expected {COUNT})"),
    ({"budget.max_iterations": 3.0}, f"budget.max_iterations: got a number 3.0 (expected {COUNT})"),
    ({"budget.max_iterations": 10**10}, "budget.max_iterations: 10000000000 is too large"),
    ({"budget.max_turns": True}, f"budget.max_turns: got a boolean true (expected {COUNT})"),
    ({"budget.max_turns": "300"}, f"budget.max_turns: got a string '300' (expected {COUNT})"),
    ({"budget.max_cost_usd": -5}, f"budget.max_cost_usd: -5 is too small (expected {COST})"),
    ({"budget.max_cost_usd": 0}, f"budget.max_cost_usd: 0 is too small (expected {COST})"),
    ({"budget.max_cost_usd": -0.01}, f"budget.max_cost_usd: -0.01 is too small (expected {COST})"),
    ({"budget.max_cost_usd": float("inf")}, "budget.max_cost_usd: .inf is too large"),
    ({"budget.max_cost_usd": float("-inf")}, "budget.max_cost_usd: -.inf is too small"),
    ({"budget.max_cost_usd": False}, "budget.max_cost_usd: got a boolean false"),
    ({"budget.max_cost_usd": "20"}, "budget.max_cost_usd: got a string '20'"),
    ({"budget.max_seconds": 1.5}, f"budget.max_seconds: got a number 1.5 (expected {DURATION})"),
    ({"budget.max_seconds": None}, f"budget.max_seconds: no value (expected {DURATION})"),
    ({"halt.max_passes": 0}, f"halt.max_passes: 0 is too small (expected {COUNT})"),
    ({"halt.no_progress_passes": -2}, "halt.no_progress_passes: -2 is too small"),
    ({"halt.unavailable_tries": 0}, f"halt.unavailable_tries: 0 is too small (expected {COUNT})"),
    (
        {"halt.unavailable_backoff": 1.5},
        f"halt.unavailable_backoff: got a number 1.5 (expected {DURATION})",
    ),
    ({"halt": [1]}, "halt: got a list (expected a mapping with any of no_progress_passes"),
    ({"budget": 5}, "budget: got a whole number 5 (expected a mapping with any of max_iterations"),
    ({"expect.files": "src/x.py"}, "expect.files: got a string 'src/x.py' (expected a list of"),
    ({"expect.files": ["a", ""]}, f"expect.files[1]: got an empty string (expected {REL_PATH})"),
    ({"judge.junit": 5}, f"judge.junit: got a whole number 5 (expected {REL_PATH})"),
    ({"build.timeout": 1.5}, f"build.timeout: got a number 1.5 (expected {DURATION})"),
    ({"plan": {"run": "p", "timeout": True}}, "plan.timeout: got a boolean true"),
    # The shallowest problem wins: a misspelt key is named before what it left missing.
    ({"judge": DELETE, "jduge": {"run": "x"}}, "unknown key 'jduge' (expected one of"),
    ({"build.run": 5, "zzz": 1}, "unknown key 'zzz'"),
]


@pytest.mark.parametrize(("changes", "expected"), SCHEMA_CASES)
def test_schema_violation_names_file_key_and_expectation(
    changes: dict[str, object], expected: str
) -> None:
    assert message_of(goal_bytes(changes)).startswith(f"{SOURCE}: {expected}")


# ---------------------------------------------------------------------------------------
# Checks beyond the schema


SEMANTIC_CASES: list[tuple[dict[str, object], str]] = [
    ({"id": "other"}, "id: 'other' does not match the file name (expected 'fix-login-timeout')"),
    ({"id": ""}, "id: '' does not match the file name (expected 'fix-login-timeout')"),
    ({"objective": ""}, "objective: is empty (expected the goal in words, at most 32,000"),
    ({"objective": " \n\t"}, "objective: is empty"),
    (
        {"objective": "x" * 40_000},
        "objective: is 40,000 characters long "
        "(expected the goal in words, at most 32,000 characters)",
    ),
    ({"objective": "é" * 32_001}, "objective: is 32,001 characters long"),
    ({"build.timeout": "1.5h"}, f"build.timeout: '1.5h' is not a duration (expected {DURATION})"),
    ({"build.timeout": "0s"}, f"build.timeout: '0s' is not greater than 0 (expected {DURATION})"),
    ({"build.timeout": 0}, f"build.timeout: 0 is not greater than 0 (expected {DURATION})"),
    ({"build.timeout": -5}, "build.timeout: -5 is not greater than 0"),
    ({"build.timeout": "-5m"}, "build.timeout: '-5m' is not a duration"),
    ({"build.timeout": "90"}, "build.timeout: '90' is not a duration"),
    ({"build.timeout": "1:30"}, "build.timeout: '1:30' is not a duration"),
    ({"build.timeout": "4 h"}, "build.timeout: '4 h' is not a duration"),
    ({"build.timeout": "4d"}, "build.timeout: '4d' is not a duration"),
    ({"build.timeout": "9000h"}, "build.timeout: '9000h' is longer than 8760h"),
    ({"build.timeout": 10**9}, "build.timeout: 1000000000 is longer than 8760h"),
    ({"judge.timeout": "soon"}, "judge.timeout: 'soon' is not a duration"),
    ({"review": {"run": "r", "timeout": "0m"}}, "review.timeout: '0m' is not greater than 0"),
    ({"plan": {"run": "p", "timeout": "x"}}, "plan.timeout: 'x' is not a duration"),
    ({"ship": {"run": "s", "timeout": "0h"}}, "ship.timeout: '0h' is not greater than 0"),
    ({"budget.max_seconds": "0s"}, "budget.max_seconds: '0s' is not greater than 0"),
    ({"budget.max_seconds": "two hours"}, "budget.max_seconds: 'two hours' is not a duration"),
    (
        {"budget.max_cost_usd": float("nan")},
        f"budget.max_cost_usd: .nan is not a finite number (expected {COST})",
    ),
    ({"owner": "bob smith"}, "owner: 'bob smith' is not a principal (expected a principal from"),
    ({"owner": "bob\n"}, "owner: 'bob\\n' is not a principal"),
    ({"expect.files": ["../x"]}, "expect.files[0]: '../x' leaves the repository through '..' "),
    ({"expect.files": ["ok", "src/../../x"]}, "expect.files[1]: 'src/../../x' leaves the"),
    ({"expect.files": ["/etc/passwd"]}, "expect.files[0]: '/etc/passwd' is an absolute path"),
    (
        {"expect.files": ["a\x00b"]},
        f"expect.files[0]: contains a NUL character (expected {REL_PATH})",
    ),
    ({"judge.junit": "../r.xml"}, "judge.junit: '../r.xml' leaves the repository through '..' "),
    ({"judge.junit": "/tmp/r.xml"}, "judge.junit: '/tmp/r.xml' is an absolute path (expected"),
    (
        {"build.run": "claude 'oops"},
        f"build.run: cannot split into shell words: No closing quotation (expected {COMMAND})",
    ),
    ({"build.run": "   "}, f"build.run: has no words (expected {COMMAND})"),
    ({"judge.run": "a\x00b"}, "judge.run: contains a NUL character"),
    ({"judge.run": ["a", "b\x00"]}, "judge.run[1]: contains a NUL character"),
    ({"ship": {"run": "'"}}, "ship.run: cannot split into shell words"),
]


@pytest.mark.parametrize(("changes", "expected"), SEMANTIC_CASES)
def test_semantic_error_names_file_key_and_problem(
    changes: dict[str, object], expected: str
) -> None:
    assert message_of(goal_bytes(changes)).startswith(f"{SOURCE}: {expected}")


def test_owner_not_in_owners_is_refused_by_name() -> None:
    data = goal_bytes({"owner": "bob@x"})
    message = message_of(data, owner_principals=["alice@example.com"])
    assert message == f"{SOURCE}: owner: bob@x is not listed in .harness/owners"


@pytest.mark.parametrize(
    ("changes", "reported"),
    [
        ({"id": "other", "objective": ""}, "id:"),
        ({"objective": "", "build.timeout": "x"}, "objective:"),
        ({"build.timeout": "x", "judge.run": "'"}, "build.timeout:"),
        ({"ship": {"run": "'"}, "budget.max_seconds": "0s"}, "ship.run:"),
        ({"budget.max_cost_usd": float("nan"), "owner": "bob@x"}, "budget.max_cost_usd:"),
        ({"owner": "bob@x", "expect.files": ["/x"]}, "owner:"),
    ],
)
def test_semantic_checks_run_in_documented_order(changes: dict[str, object], reported: str) -> None:
    message = message_of(goal_bytes(changes), owner_principals=["alice@example.com"])
    assert message.startswith(f"{SOURCE}: {reported}")


def test_owner_with_a_bidi_override_is_not_a_principal() -> None:
    message = message_of(goal_bytes({"owner": "\u202ebob@x"}))
    assert message.startswith(f"{SOURCE}: owner: '\\u202ebob@x' is not a principal")


def test_owner_is_not_checked_without_an_owners_list() -> None:
    assert parse(goal_bytes({"owner": "bob@x"})).owner == "bob@x"


def test_invalid_id_equal_to_its_invalid_stem_is_refused() -> None:
    message = message_of(goal_bytes({"id": "Fix"}), expected_id="Fix")
    assert message.startswith(f"{SOURCE}: id: 'Fix' is not a valid goal id (expected 1 to 63")


# ---------------------------------------------------------------------------------------
# Bytes that are not a goal mapping at all


RAW_CASES: list[tuple[bytes, str]] = [
    (
        b"version: 1\nid: \xff\n",
        "line 2: byte 0xff at offset 15 is not UTF-8 (expected UTF-8 text)",
    ),
    (b"\xfe\xff\x00v", "line 1: byte 0xfe at offset 0 is not UTF-8"),
    (b"version: 1\nid: a\nowner: b\nid: c\n", "line 4: duplicate key 'id', first on line 2"),
    (b"budget:\n  max_turns: 1\n  max_turns: 2\n", "line 3: duplicate key 'max_turns', first on"),
    (b"version: 1\nversion: 1.0\n", "line 2: duplicate key 'version'"),
    (
        b"build: [a\n",
        "line 2: while parsing a flow sequence, expected ',' or ']', but got '<stream end>'",
    ),
    (
        b"a:\n\tb: 1\n",
        "line 2: indented with a tab (expected indentation with spaces)",
    ),
    (b"a: 'x\n", "line 2: while scanning a quoted scalar, found unexpected end of stream"),
    (b"a: &x [1]\nb: *x\n", "line 2: aliases (*name) are not allowed"),
    (b"[" * 10_000, "line 1: nested more than 32 levels"),
    (
        b"a:\n" + b"".join(b"  " * n + b"- \n" for n in range(1, 40)),
        "line 33: nested more than 32 levels",
    ),
    (b"a: \x01\n", "line 1: character U+0001 is not allowed (expected printable text)"),
    (b"a: 1\n\n\x7f\n", "line 3: character U+007F is not allowed"),
    (
        b"a: 1\n---\nb: 2\n",
        "line 2: expected a single document in the stream, but found another document",
    ),
    (b"a: !!binary aGk=\n", "line 1: could not determine a constructor for the tag"),
    (b"a: !!timestamp 2024-01-01\n", "line 1: could not determine a constructor for the tag"),
    (b"a: !!set {x}\n", "line 1: could not determine a constructor for the tag"),
    (b"a: !!python/object/apply:os.system [id]\n", "line 1: could not determine a constructor"),
    (b"a: !!int abc\n", "line 1: cannot read 'abc' as int"),
    (b"a: !!int ''\n", "line 1: cannot read '' as int"),
    (b"a: !!bool maybe\n", "line 1: cannot read 'maybe' as bool"),
    (b"a: !!float x\n", "line 1: cannot read 'x' as float"),
    (b"x: " + b"9" * 5000 + b"\n", "line 1: cannot read '99999"),
    (b"? [a]\n: 1\n", "line 1: while constructing a mapping, found unhashable key"),
    (b"", "file is empty (expected a mapping of keys to values)"),
    (b"# only a comment\n", "file is empty"),
    (b"- a\n- b\n", "top level is a list (expected a mapping of keys to values)"),
    (b"hello\n", "top level is a string (expected a mapping"),
    (b"42\n", "top level is a whole number (expected a mapping"),
    (b"a" * (MAX_GOAL_FILE_BYTES + 1), "file is 262,145 bytes (expected at most 262,144 bytes)"),
]


@pytest.mark.parametrize(("data", "expected"), RAW_CASES)
def test_unreadable_file_names_file_and_line(data: bytes, expected: str) -> None:
    assert message_of(data).startswith(f"{SOURCE}: {expected}")


# ---------------------------------------------------------------------------------------
# The loader keeps YAML's surprises out


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2024-01-01", "2024-01-01"),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("1:30", "1:30"),
        ("1:30.5", "1:30.5"),
        ("true", True),
        ("False", False),
        ("null", None),
        ("~", None),
        ("", None),
        ("12", 12),
        ("-3", -3),
        ("1_000", 1000),
        ("0x10", 16),
        ("0b11", 3),
        ("1.5", 1.5),
        (".5", 0.5),
        ("'12'", "12"),
        ("1e3", "1e3"),
    ],
)
def test_plain_scalars_are_json_types_without_yaml_1_1_surprises(text: str, value: object) -> None:
    loaded = yamlutil.load_yaml(f"v: {text}\n".encode(), "f.yaml")
    assert isinstance(loaded, dict)
    assert loaded == {"v": value}
    assert type(loaded["v"]) is type(value)


def test_nan_loads_as_a_float_for_the_finiteness_check_to_refuse() -> None:
    loaded = yamlutil.load_yaml(b"v: .nan\n", "f.yaml")
    assert isinstance(loaded, dict)
    assert loaded["v"] != loaded["v"]


def test_merge_key_values_may_be_overridden_without_a_duplicate_error() -> None:
    assert yamlutil.load_yaml(b"<<: {a: 1, b: 2}\na: 3\n", "f.yaml") == {"a": 3, "b": 2}


def test_loader_leaves_pyyaml_safeloader_unchanged() -> None:
    yamlutil.load_yaml(b"v: 1\n", "f.yaml")
    assert yaml.safe_load("v: yes\nd: 2024-01-01\n")["v"] is True


# ---------------------------------------------------------------------------------------
# Goal ids and durations on their own


@pytest.mark.parametrize("goal_id", ["a", "0", "fix-login", "a-", "9lives", "a" * 63])
def test_valid_goal_id_is_returned(goal_id: str) -> None:
    assert check_goal_id(goal_id, "harness new") == goal_id


@pytest.mark.parametrize(
    ("goal_id", "problem"),
    [
        ("", "goal id is empty"),
        ("a" * 64, "goal id is 64 characters long"),
        ("../x", "'../x' is not a valid goal id"),
        ("a/b", "'a/b' is not a valid goal id"),
        ("a\x00", "'a\\x00' is not a valid goal id"),
        ("fix\n", "'fix\\n' is not a valid goal id"),
        ("Fix", "'Fix' is not a valid goal id"),
        ("-a", "'-a' is not a valid goal id"),
        ("a_b", "'a_b' is not a valid goal id"),
        ("a.b", "'a.b' is not a valid goal id"),
        ("é", "'é' is not a valid goal id"),
        (" a", "' a' is not a valid goal id"),
    ],
)
def test_invalid_goal_id_is_refused(goal_id: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_goal_id(goal_id, "harness new")
    expected = "1 to 63 lowercase letters, digits or '-', starting with a letter or digit"
    assert caught.value.message == f"harness new: id: {problem} (expected {expected})"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90s", 90), ("30m", 1800), ("4h", 14400), ("1s", 1), (45, 45), ("8760h", 31_536_000)],
)
def test_duration_is_seconds(value: object, seconds: int) -> None:
    assert parse_duration(value, "f.yaml", "k") == seconds


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (True, "got a boolean true"),
        (1.5, "got a number 1.5"),
        (None, "no value"),
        ([1], "got a list"),
        ("", "'' is not a duration"),
        ("90S", "'90S' is not a duration"),
        ("9" * 5000 + "s", "'99999"),
        ("0s", "'0s' is not greater than 0"),
        (-1, "-1 is not greater than 0"),
        (31_536_001, "31536001 is longer than 8760h"),
    ],
)
def test_invalid_duration_is_refused(value: object, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_duration(value, "f.yaml", "build.timeout")
    assert caught.value.message.startswith(f"f.yaml: build.timeout: {problem}")
    assert caught.value.message.endswith(
        "(expected a duration like 90s, 30m or 4h, or a whole number of seconds, up to 8760h)"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"max_iterations": 0},
        {"max_seconds": -1},
        {"max_turns": True},
        {"max_cost_usd": float("nan")},
        {"max_cost_usd": float("inf")},
        {"max_cost_usd": 0.0},
        {"max_cost_usd": "20"},
    ],
)
def test_budget_refuses_a_limit_that_would_grant_a_fresh_allowance(
    changes: dict[str, object],
) -> None:
    fields: dict[str, Any] = {
        "max_iterations": 3,
        "max_seconds": 60,
        "max_cost_usd": 1.0,
        "max_turns": 5,
    }
    with pytest.raises(ValueError, match=next(iter(changes))):
        Budget(**{**fields, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {"no_progress_passes": 0},
        {"max_passes": -3},
        {"unavailable_tries": 0},
        {"unavailable_backoff_s": 0},
    ],
)
def test_halt_refuses_a_non_positive_value(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(changes))):
        Halt(**{"no_progress_passes": 2, "max_passes": 50, **changes})


# ---------------------------------------------------------------------------------------
# The shipped schema and the import-time promise


def test_goal_schema_is_valid_draft_2020_12_package_data() -> None:
    import jsonschema  # type: ignore[import-untyped]

    schema = yamlutil.load_schema("goal.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["version", "id", "owner", "objective", "build", "judge"]


def test_importing_goal_does_not_import_jsonschema() -> None:
    code = (
        "import sys, harness.model.goal, harness.model.config; print('jsonschema' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------
# Fuzz: whatever the bytes, the only failure is one InvalidInput line naming the file


def assert_only_invalid_input(data: bytes) -> None:
    try:
        goal = parse(data)
    except InvalidInput as exc:
        assert exc.message.startswith(f"{SOURCE}: ")
        assert "\n" not in exc.message and "\r" not in exc.message
    else:
        assert goal.sha256 == hashlib.sha256(data).hexdigest()


json_values = json_values_for("90s", "0s", "4h", "..", "/x", "-", "a\x00b", "plain")
key_paths = st.sampled_from(
    [
        "version",
        "id",
        "owner",
        "objective",
        "build",
        "build.run",
        "build.timeout",
        "build.format",
        "judge.run",
        "judge.junit",
        "review",
        "review.run",
        "ship.timeout",
        "budget",
        "budget.max_iterations",
        "budget.max_seconds",
        "budget.max_cost_usd",
        "halt.max_passes",
        "expect.files",
        "expect",
        "extra",
    ]
)


@FUZZ
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes_give_only_invalid_input(data: bytes) -> None:
    assert_only_invalid_input(data)


@FUZZ
@given(st.dictionaries(key_paths, json_values | st.just(DELETE), min_size=1, max_size=4))
def test_fuzz_mutated_valid_goal_gives_only_invalid_input(changes: dict[str, object]) -> None:
    assert_only_invalid_input(mutated(CONTRACT_GOAL, changes))


@FUZZ
@given(byte_edits(CONTRACT_GOAL))
def test_fuzz_byte_edits_of_the_contract_goal_give_only_invalid_input(
    edits: list[tuple[int, bytes, int]],
) -> None:
    assert_only_invalid_input(edited(CONTRACT_GOAL, edits))
