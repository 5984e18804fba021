""".harness/config.yaml: defaults when absent, typed settings when valid, one exact error else."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.model import yamlutil
from harness.model.config import (
    DEFAULT_CONFIG,
    DESTRUCTIVE_CLASSES,
    Bind,
    Config,
    DestructiveRule,
    parse_config,
)
from harness.model.goal import parse_goal
from harness.model.limits import Budget, Defaults, Halt

SOURCE = ".harness/config.yaml"

# The settings file as documented, every key given its default value.
DOCUMENTED = """\
version: 1
control_ref: main          # default: the branch checked out in the main worktree
branch_prefix: harness/    # goal branch = prefix + id
defaults:
  budget: {max_iterations: 3, max_seconds: 2h, max_cost_usd: 20, max_turns: 300}
  halt: {no_progress_passes: 2, max_passes: 50}
  timeouts: {build: 30m, judge: 10m, review: 10m, plan: 10m, ship: 10m}
scrub_env: [AWS_SECRET_ACCESS_KEY]    # extra env var names never passed to children
destructive: []                       # extra destructive rules
"""

CUSTOM = """\
control_ref: release/2.x
branch_prefix: bots/goal-
defaults:
  budget: {max_iterations: 5, max_seconds: 90m, max_cost_usd: 2.5, max_turns: 40}
  halt: {no_progress_passes: 3, max_passes: 9}
  timeouts: {build: 1h, judge: 120, review: 5m, plan: 6m, ship: 7m}
scrub_env: [AWS_SECRET_ACCESS_KEY, _PRIVATE_TOKEN]
destructive:
  - class: payments
    paths: ["billing/**", "*.stripe.json"]
    lines: ['stripe\\.Charge', '(?i)refund']
  - class: schema_change
    paths: [db/migrations/**]
  - class: auth
    lines: ['^\\+.*password']
"""

COUNT = "a whole number from 1 to 1000000000"
DURATION = "a duration like 90s, 30m or 4h, or a whole number of seconds, up to 8760h"
CLASSES = ", ".join(DESTRUCTIVE_CLASSES)


def config_bytes(document: dict[str, Any]) -> bytes:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode()


def message_of(data: bytes) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse_config(data, SOURCE)
    assert caught.value.exit_code == 2
    return caught.value.message


# ---------------------------------------------------------------------------------------
# Valid settings


def test_default_config_holds_the_documented_defaults() -> None:
    documented = Config(
        control_ref=None,
        branch_prefix="harness/",
        defaults=Defaults(
            budget=Budget(max_iterations=3, max_seconds=7200, max_cost_usd=20.0, max_turns=300),
            halt=Halt(no_progress_passes=2, max_passes=50),
            timeouts={"build": 1800, "judge": 600, "review": 600, "plan": 600, "ship": 600},
        ),
        scrub_env=(),
        destructive=(),
    )
    assert documented == DEFAULT_CONFIG


@pytest.mark.parametrize("data", [None, b"", b"# nothing set here\n", b"---\n"])
def test_missing_or_empty_file_gives_the_defaults(data: bytes | None) -> None:
    assert parse_config(data, SOURCE) == DEFAULT_CONFIG


def test_documented_example_parses_to_the_defaults_plus_its_settings() -> None:
    config = parse_config(DOCUMENTED.encode(), SOURCE)
    assert config.control_ref == "main"
    assert config.scrub_env == ("AWS_SECRET_ACCESS_KEY",)
    assert config.defaults == DEFAULT_CONFIG.defaults
    assert (config.branch_prefix, config.destructive) == ("harness/", ())


def test_custom_settings_parse_into_typed_records() -> None:
    assert parse_config(CUSTOM.encode(), SOURCE) == Config(
        control_ref="release/2.x",
        branch_prefix="bots/goal-",
        defaults=Defaults(
            budget=Budget(max_iterations=5, max_seconds=5400, max_cost_usd=2.5, max_turns=40),
            halt=Halt(no_progress_passes=3, max_passes=9),
            timeouts={"build": 3600, "judge": 120, "review": 300, "plan": 360, "ship": 420},
        ),
        scrub_env=("AWS_SECRET_ACCESS_KEY", "_PRIVATE_TOKEN"),
        destructive=(
            DestructiveRule(
                cls="payments",
                paths=("billing/**", "*.stripe.json"),
                lines=("stripe\\.Charge", "(?i)refund"),
            ),
            DestructiveRule(cls="schema_change", paths=("db/migrations/**",), lines=()),
            DestructiveRule(cls="auth", paths=(), lines=("^\\+.*password",)),
        ),
    )


def test_partial_defaults_keep_the_builtin_value_for_every_other_key() -> None:
    data = b"defaults:\n  budget: {max_cost_usd: 5}\n  timeouts: {judge: 1m}\n"
    defaults = parse_config(data, SOURCE).defaults
    assert defaults.budget == Budget(
        max_iterations=3, max_seconds=7200, max_cost_usd=5.0, max_turns=300
    )
    assert defaults.halt == DEFAULT_CONFIG.defaults.halt
    assert dict(defaults.timeouts) == {
        "build": 1800,
        "judge": 60,
        "review": 600,
        "plan": 600,
        "ship": 600,
    }


def test_default_timeouts_cannot_be_changed_in_place() -> None:
    with pytest.raises(TypeError):
        DEFAULT_CONFIG.defaults.timeouts["build"] = 1  # type: ignore[index]


def test_config_defaults_reach_a_goal_that_leaves_them_out() -> None:
    config = parse_config(b"defaults:\n  timeouts: {build: 5m}\n  budget: {max_turns: 7}\n", SOURCE)
    goal_text = (
        "version: 1\nid: g\nowner: a@b\nobjective: do it\n"
        "build: {run: agent}\njudge: {run: pytest}\n"
    )
    goal = parse_goal(goal_text.encode(), "goals/g.yaml", "g", config.defaults)
    assert (goal.build.timeout_s, goal.judge.timeout_s, goal.budget.max_turns) == (300, 600, 7)


def test_destructive_classes_are_the_contracts_eight_and_the_schemas_enum() -> None:
    schema = yamlutil.load_schema("config.schema.json")
    assert list(DESTRUCTIVE_CLASSES) == schema["$defs"]["rule"]["properties"]["class"]["enum"]
    assert DESTRUCTIVE_CLASSES == (
        "schema_change",
        "data_deletion",
        "secret_rotation",
        "auth",
        "payments",
        "production_deploy",
        "branch_protection",
        "external_accounts",
        "git_behaviour",
        "dependencies",
    )


def test_config_schema_is_valid_draft_2020_12_package_data() -> None:
    import jsonschema  # type: ignore[import-untyped]

    jsonschema.Draft202012Validator.check_schema(yamlutil.load_schema("config.schema.json"))


@pytest.mark.parametrize("ref", ["main", "release/2.x", "feature/a-b_c", "v1.0", "HEAD"])
def test_control_ref_accepts_branch_names(ref: str) -> None:
    assert parse_config(config_bytes({"control_ref": ref}), SOURCE).control_ref == ref


# ---------------------------------------------------------------------------------------
# Every violation, its exact message


ERROR_CASES: list[tuple[dict[str, Any], str]] = [
    (
        {"foo": 1},
        "unknown key 'foo' (expected one of version, control_ref, branch_prefix, defaults, "
        "scrub_env, redact_env, destructive, prices, sandbox, sandbox_binds, notify)",
    ),
    (
        {"sandbox": "sometimes"},
        "sandbox: 'sometimes' is not supported (expected one of auto, required, off)",
    ),
    ({"sandbox_binds": ["relative/path"]}, "sandbox_binds[0]: 'relative/path' is not a path"),
    ({"sandbox_binds": ["~/a/../.ssh"]}, "sandbox_binds[0]: '~/a/../.ssh' is not a path to bind"),
    ({"sandbox_binds": ["~/"]}, "sandbox_binds[0]: '~/' is not a path to bind"),
    (
        {"sandbox_binds": ["rw:"]},
        "sandbox_binds[0]: 'rw:' is not a path to bind (expected ~/<path> or an absolute path "
        "without .., read-only, or writable as rw:<path>)",
    ),
    ({"sandbox_binds": ["/a", "rw:relative"]}, "sandbox_binds[1]: 'rw:relative' is not a path"),
    ({"sandbox_binds": ["rw: ~/.codex"]}, "sandbox_binds[0]: 'rw: ~/.codex' is not a path"),
    ({"sandbox_binds": ["rw:rw:/x"]}, "sandbox_binds[0]: 'rw:rw:/x' is not a path to bind"),
    ({"sandbox_binds": ["ro:/x"]}, "sandbox_binds[0]: 'ro:/x' is not a path to bind"),
    ({"sandbox_binds": [{"rw": "~/.codex"}]}, "sandbox_binds[0]: got a mapping"),
    ({"sandbox_binds": "~/.claude"}, "sandbox_binds: got a string"),
    ({"sandbox": True}, "sandbox: got a boolean true (expected one of auto, required, off)"),
    ({"defaults": {"retries": 1}}, "defaults: unknown key 'retries' (expected one of budget,"),
    (
        {"defaults": {"timeouts": {"deploy": "1m"}}},
        "defaults.timeouts: unknown key 'deploy' "
        "(expected one of build, judge, review, plan, ship)",
    ),
    ({"defaults": {"budget": {"max_cost": 1}}}, "defaults.budget: unknown key 'max_cost'"),
    ({"version": 2}, "version: 2 is not supported (expected 1)"),
    ({"control_ref": ""}, "control_ref: got an empty string (expected a git branch name such as"),
    ({"control_ref": 5}, "control_ref: got a whole number 5 (expected a git branch name"),
    ({"control_ref": "--upload-pack=x"}, "control_ref: '--upload-pack=x' is not a valid git"),
    ({"control_ref": "ma in"}, "control_ref: 'ma in' is not a valid git branch name"),
    ({"control_ref": "a..b"}, "control_ref: 'a..b' is not a valid git branch name"),
    ({"control_ref": "main.lock"}, "control_ref: 'main.lock' is not a valid git branch name"),
    ({"control_ref": "main/"}, "control_ref: 'main/' is not a valid git branch name"),
    ({"control_ref": "/main"}, "control_ref: '/main' is not a valid git branch name"),
    ({"control_ref": "a/.b"}, "control_ref: 'a/.b' is not a valid git branch name"),
    ({"control_ref": "a@{1}"}, "control_ref: 'a@{1}' is not a valid git branch name"),
    ({"control_ref": "a:b"}, "control_ref: 'a:b' is not a valid git branch name"),
    ({"control_ref": "a~1"}, "control_ref: 'a~1' is not a valid git branch name"),
    ({"control_ref": "main\n"}, "control_ref: 'main\\n' is not a valid git branch name"),
    ({"control_ref": "@"}, "control_ref: '@' is not a valid git branch name"),
    ({"branch_prefix": ""}, "branch_prefix: got an empty string (expected a prefix for goal"),
    (
        {"branch_prefix": "-h/"},
        "branch_prefix: '-h/' does not make valid git branch names "
        "(expected a prefix such as harness/)",
    ),
    ({"branch_prefix": "a b/"}, "branch_prefix: 'a b/' does not make valid git branch names"),
    ({"branch_prefix": "h//"}, "branch_prefix: 'h//' does not make valid git branch names"),
    ({"branch_prefix": "h/."}, "branch_prefix: 'h/.' does not make valid git branch names"),
    ({"defaults": {"budget": {"max_iterations": 0}}}, "defaults.budget.max_iterations: 0 is too"),
    ({"defaults": {"budget": {"max_turns": True}}}, "defaults.budget.max_turns: got a boolean"),
    (
        {"defaults": {"budget": {"max_cost_usd": float("nan")}}},
        "defaults.budget.max_cost_usd: .nan is not a finite number",
    ),
    ({"defaults": {"budget": {"max_cost_usd": -1}}}, "defaults.budget.max_cost_usd: -1 is too"),
    ({"defaults": {"budget": {"max_seconds": "0s"}}}, "defaults.budget.max_seconds: '0s' is not"),
    (
        {"defaults": {"timeouts": {"build": "forever"}}},
        f"defaults.timeouts.build: 'forever' is not a duration (expected {DURATION})",
    ),
    ({"defaults": {"timeouts": {"ship": 0}}}, "defaults.timeouts.ship: 0 is not greater than 0"),
    (
        {"defaults": {"halt": {"max_passes": -1}}},
        f"defaults.halt.max_passes: -1 is too small (expected {COUNT})",
    ),
    ({"defaults": {"halt": 3}}, "defaults.halt: got a whole number 3 (expected a mapping with"),
    ({"defaults": []}, "defaults: got a list (expected a mapping with any of budget, halt,"),
    ({"scrub_env": "AWS_KEY"}, "scrub_env: got a string 'AWS_KEY' (expected a list of environment"),
    ({"scrub_env": [""]}, "scrub_env[0]: got an empty string (expected an environment variable"),
    (
        {"scrub_env": ["OK", "1BAD"]},
        "scrub_env[1]: '1BAD' is not an environment variable name "
        "(expected letters, digits and '_', not starting with a digit)",
    ),
    ({"scrub_env": ["A B"]}, "scrub_env[0]: 'A B' is not an environment variable name"),
    ({"scrub_env": ["A=B"]}, "scrub_env[0]: 'A=B' is not an environment variable name"),
    ({"scrub_env": ["KEY\n"]}, "scrub_env[0]: 'KEY\\n' is not an environment variable name"),
    (
        {"redact_env": ["DEPLOY_KEY", "2FA"]},
        "redact_env[1]: '2FA' is not an environment variable name "
        "(expected letters, digits and '_', not starting with a digit)",
    ),
    ({"redact_env": "DEPLOY_KEY"}, "redact_env: got a string 'DEPLOY_KEY' (expected a list"),
    ({"destructive": {"class": "auth"}}, "destructive: got a mapping (expected a list of rules"),
    ({"destructive": ["auth"]}, "destructive[0]: got a string 'auth' (expected a rule: a mapping"),
    (
        {"destructive": [{"class": "nope", "paths": ["x"]}]},
        f"destructive[0].class: 'nope' is not supported (expected one of {CLASSES})",
    ),
    (
        {"destructive": [{"paths": ["x"]}]},
        f"destructive[0].class: required key is missing (expected one of {CLASSES})",
    ),
    (
        {"destructive": [{"class": "auth", "paths": ["x"], "why": "y"}]},
        "destructive[0]: unknown key 'why' (expected one of class, paths, lines, enforce)",
    ),
    (
        {"destructive": [{"class": "auth", "paths": ["x"], "enforce": "maybe"}]},
        "destructive[0].enforce: 'maybe' is not supported (expected block or warn)",
    ),
    (
        {"destructive": [{"class": "auth", "enforce": "warn"}]},
        "destructive[0].enforce: 'warn' with neither paths nor lines would make the built-in "
        "class auth warn (expected block: the ten built-in classes always block",
    ),
    (
        {"destructive": [{"class": "auth", "paths": ["a"]}, {"class": "auth"}]},
        "destructive[1]: rule has neither paths nor lines "
        "(expected at least one path glob or line regex)",
    ),
    (
        {"destructive": [{"class": "auth", "paths": [], "lines": []}]},
        "destructive[0]: rule has neither paths nor lines",
    ),
    (
        {"destructive": [{"class": "auth", "paths": "x"}]},
        "destructive[0].paths: got a string 'x' (expected a list of path globs)",
    ),
    (
        {"destructive": [{"class": "auth", "paths": [""]}]},
        "destructive[0].paths[0]: got an empty string (expected a non-empty path glob)",
    ),
    (
        {"destructive": [{"class": "auth", "lines": ["ok", "foo("]}]},
        "destructive[0].lines[1]: 'foo(' does not compile: missing ), unterminated subpattern "
        "at position 3 (expected a Python regular expression)",
    ),
    (
        {"destructive": [{"class": "auth", "lines": ["a{99999999999}"]}]},
        "destructive[0].lines[0]: 'a{99999999999}' does not compile: the repetition number is",
    ),
    (
        {"destructive": [{"class": "auth", "lines": ["(" * 60_000 + ")" * 60_000]}]},
        "destructive[0].lines[0]: '((((",
    ),
]


@pytest.mark.parametrize("mode", ["auto", "required", "off"])
def test_sandbox_mode_parses(mode: str) -> None:
    assert parse_config(config_bytes({"sandbox": mode}), SOURCE).sandbox == mode


def test_sandbox_binds_parse_in_order_read_only_unless_rw() -> None:
    document = {"sandbox_binds": ["~/.claude", "rw:/var/cache/pip", "rw:~/.codex"]}
    binds = parse_config(config_bytes(document), SOURCE).sandbox_binds
    assert binds == (
        Bind("~/.claude"),
        Bind("/var/cache/pip", writable=True),
        Bind("~/.codex", writable=True),
    )
    assert [str(bind) for bind in binds] == document["sandbox_binds"]


def test_sandbox_left_out_means_the_runners_default() -> None:
    assert parse_config(config_bytes({"branch_prefix": "h/"}), SOURCE).sandbox is None


@pytest.mark.parametrize(("document", "expected"), ERROR_CASES)
def test_config_error_names_file_key_and_expectation(
    document: dict[str, Any], expected: str
) -> None:
    assert message_of(config_bytes(document)).startswith(f"{SOURCE}: {expected}")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"- a\n", "top level is a list (expected a mapping of keys to values)"),
        (b"branch_prefix: a\nbranch_prefix: b\n", "line 2: duplicate key 'branch_prefix'"),
        (b"scrub_env: [\xff]\n", "line 1: byte 0xff at offset 12 is not UTF-8"),
        (b"#" * (256 * 1024 + 1), "file is 262,145 bytes (expected at most 262,144 bytes)"),
    ],
)
def test_unreadable_config_names_file_and_line(data: bytes, expected: str) -> None:
    assert message_of(data).startswith(f"{SOURCE}: {expected}")


# ---------------------------------------------------------------------------------------
# Fuzz: only InvalidInput, as one line naming the file

config_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["auth", "main", "-x", "1m", "(", "harness/", "A_B"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["class", "paths", "lines", "x"]), children, max_size=3)
    ),
    max_leaves=6,
)
config_keys = st.sampled_from(
    [
        "version",
        "control_ref",
        "branch_prefix",
        "defaults",
        "defaults.budget",
        "defaults.halt",
        "defaults.timeouts",
        "defaults.timeouts.build",
        "defaults.budget.max_cost_usd",
        "scrub_env",
        "destructive",
        "extra",
    ]
)


def assert_only_invalid_input(data: bytes) -> None:
    try:
        parse_config(data, SOURCE)
    except InvalidInput as exc:
        assert exc.message.startswith(f"{SOURCE}: ")
        assert "\n" not in exc.message and "\r" not in exc.message


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(config_keys, config_values, min_size=1, max_size=4))
def test_fuzz_mutated_config_gives_only_invalid_input(changes: dict[str, Any]) -> None:
    document = copy.deepcopy(yaml.safe_load(CUSTOM))
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = document
        for name in parents:
            target = target.get(name) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[last] = value
    assert_only_invalid_input(config_bytes(document))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1000))
def test_fuzz_random_config_bytes_give_only_invalid_input(data: bytes) -> None:
    assert_only_invalid_input(data)
