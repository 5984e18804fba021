"""Goal files (goals/<id>.yaml, version 1): load, validate, and the typed records inside.

Every check happens here, at the edge; nothing deeper reads the raw mapping. Each refusal
is one InvalidInput line naming the file, the key path and what was expected.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from harness.errors import invalid
from harness.model import yamlutil
from harness.model.cache import ParsedCache
from harness.model.goalid import MAX_GOAL_FILE_BYTES, SCHEMA, check_goal_id
from harness.model.limits import (
    COST_EXPECTED,
    MAX_DURATION_SECONDS,
    Budget,
    Defaults,
    Halt,
    budget_from,
    halt_from,
    parse_duration,
)
from harness.model.network import SHARED, Allowlist, Network, network_from, network_words
from harness.model.wording import show_value

MAX_OBJECTIVE_CHARS = 32_000
COMMAND_EXPECTED = "a command: a non-empty string of shell words or a non-empty list of strings"
RELATIVE_PATH_EXPECTED = "a relative path inside the repository, without '..'"
GLOB_EXPECTED = (
    "a glob relative to the repository root, without '..' and not under ledger/ or .harness/"
)
# The harness's own folders: an expect glob never counts (or names) a file there.
HARNESS_TOPS = ("ledger", ".harness")


@dataclass(frozen=True)
class StepSpec:
    run: tuple[str, ...]
    timeout_s: int
    network: bool = True  # false: not the runner's network (bwrap --unshare-net)
    # With `network` false: the only hosts the step reaches, through the proxy (network.py).
    allow: Allowlist | None = None


@dataclass(frozen=True)
class BuildSpec:
    run: tuple[str, ...]
    timeout_s: int
    format: str
    network: bool = True
    allow: Allowlist | None = None


@dataclass(frozen=True)
class JudgeSpec:
    run: tuple[str, ...]
    timeout_s: int
    junit: str | None
    network: bool = True
    allow: Allowlist | None = None


@dataclass(frozen=True)
class ExpectGlob:
    """`expect.globs[i]`: at the done gate, the goal's files matching `glob` (only those not
    in the goal's base commit when `new`) number at least `min` and at most `max`."""

    glob: str
    min: int = 1
    max: int | None = None
    new: bool = False


@dataclass(frozen=True)
class Goal:
    id: str
    owner: str
    objective: str
    build: BuildSpec
    judge: JudgeSpec
    review: StepSpec | None
    plan: StepSpec | None
    ship: StepSpec | None
    budget: Budget
    halt: Halt
    expect_files: tuple[str, ...]
    sha256: str  # hex SHA-256 of the exact file bytes: what an approval signs
    source: str  # the path used in messages, e.g. "goals/fix-login.yaml"
    expect_globs: tuple[ExpectGlob, ...] = ()
    # `every`: a recurring goal's interval in seconds (None: one-shot), and its `lifetime`
    # caps under the cell's names (cost_usd, seconds, turns, runs; a cap not set is absent).
    every_s: int | None = None
    lifetime: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def offline_steps(self) -> list[str]:
        """The steps that need the sandbox to take the runner's network away, as the goal
        file names them: `build.network: false`, `judge.network.allow`."""
        steps = {"plan": self.plan, "build": self.build, "judge": self.judge}
        steps |= {"review": self.review, "ship": self.ship}
        named = [(name, Network(spec.network, spec.allow)) for name, spec in steps.items() if spec]
        return network_words(named)


def load_goal(
    path: Path,
    source: str,
    defaults: Defaults,
    owner_principals: Collection[str] | None = None,
) -> Goal:
    """Read and parse goals/<id>.yaml; the expected id is the file's stem."""
    data = yamlutil.read_capped(path, MAX_GOAL_FILE_BYTES, source)
    return parse_goal(data, source, path.stem, defaults, owner_principals)


def parse_goal(
    data: bytes,
    source: str,
    expected_id: str,
    defaults: Defaults,
    owner_principals: Collection[str] | None = None,
) -> Goal:
    """Validate a goal file's bytes into a Goal; InvalidInput for anything else.

    Order: size, YAML, top-level mapping, JSON Schema, then the checks a schema cannot
    express (id and file name, lengths, durations, finiteness, owners, paths).
    """
    return read_goal(data, source, expected_id, defaults, owner_principals, None)[0]


def read_goal(
    data: bytes,
    source: str,
    expected_id: str,
    defaults: Defaults,
    owner_principals: Collection[str] | None,
    cache: ParsedCache | None,
) -> tuple[Goal, Mapping[str, Any] | None]:
    """`parse_goal`, taking the schema-checked mapping from `cache` when it vouches for
    these bytes (model/cache.py); the checks after the schema run every time. Also returns
    the mapping when it was parsed now (None when it came from the cache), which the caller
    remembers only once the goal is approved and moves on (`Control.vouch_goal`)."""
    yamlutil.check_size(data, MAX_GOAL_FILE_BYTES, source)
    raw = cache.recall(data) if cache is not None else None
    if raw is not None:
        return _goal_from(raw, data, source, expected_id, defaults, owner_principals), None
    raw = yamlutil.expect_mapping(yamlutil.load_yaml(data, source), source)
    yamlutil.validate(raw, SCHEMA, source)
    return _goal_from(raw, data, source, expected_id, defaults, owner_principals), raw


def _goal_from(
    raw: Mapping[str, Any],
    data: bytes,
    source: str,
    expected_id: str,
    defaults: Defaults,
    owner_principals: Collection[str] | None,
) -> Goal:
    # Built one by one so the checks run, and fail, in a fixed and documented order.
    goal_id = _checked_id(raw["id"], expected_id, source)
    objective = _checked_objective(raw["objective"], source)
    timeouts = defaults.timeouts
    build = _build_spec(raw["build"], timeouts["build"], source, defaults)
    judge = _judge_spec(raw["judge"], timeouts["judge"], source, defaults)
    review = _step_spec(raw.get("review"), "review", timeouts["review"], source, defaults)
    plan = _step_spec(raw.get("plan"), "plan", timeouts["plan"], source, defaults)
    ship = _step_spec(raw.get("ship"), "ship", timeouts["ship"], source, defaults)
    budget = budget_from(raw.get("budget", {}), defaults.budget, source, "budget")
    halt = halt_from(raw.get("halt", {}), defaults.halt, source, "halt")
    owner = _checked_owner(raw["owner"], owner_principals, source)
    expect_files = _expect_files(raw.get("expect", {}), source)
    expect_globs = _expect_globs(raw.get("expect", {}), source)
    every_s, lifetime = _recurrence(raw, source)
    if every_s is not None and "stale_after" not in raw.get("halt", {}):
        # A recurring goal is stale when two runs in a row did not come (cli.md, status).
        stale_after = min(2 * every_s, MAX_DURATION_SECONDS)
        halt = dataclasses.replace(halt, stale_after_s=stale_after)
    return Goal(
        id=goal_id,
        owner=owner,
        objective=objective,
        build=build,
        judge=judge,
        review=review,
        plan=plan,
        ship=ship,
        budget=budget,
        halt=halt,
        expect_files=expect_files,
        expect_globs=expect_globs,
        sha256=hashlib.sha256(data).hexdigest(),
        source=source,
        every_s=every_s,
        lifetime=lifetime,
    )


def _recurrence(raw: Mapping[str, Any], source: str) -> tuple[int | None, dict[str, float]]:
    """`every` and `lifetime` (docs/specs/goal-file.md, "Recurring goals")."""
    every = parse_duration(raw["every"], source, "every") if "every" in raw else None
    caps = raw.get("lifetime")
    if caps is None:
        return every, {}
    if every is None:
        raise invalid(
            source,
            "lifetime",
            "lifetime caps are set but the goal does not recur",
            "an `every: <duration>` beside it, or no lifetime",
        )
    lifetime: dict[str, float] = {}
    if "max_cost_usd" in caps:
        lifetime["cost_usd"] = _finite_cost(caps["max_cost_usd"], source)
    if "max_seconds" in caps:
        lifetime["seconds"] = parse_duration(caps["max_seconds"], source, "lifetime.max_seconds")
    for key in ("turns", "runs"):
        if f"max_{key}" in caps:
            lifetime[key] = caps[f"max_{key}"]
    return every, lifetime


def _finite_cost(value: float, source: str) -> float:
    if not math.isfinite(value):
        raise invalid(source, "lifetime.max_cost_usd", f"{value!r} is not finite", COST_EXPECTED)
    return float(value)


def _checked_id(goal_id: str, expected_id: str, source: str) -> str:
    if goal_id != expected_id:
        problem = f"{show_value(goal_id)} does not match the file name"
        raise invalid(source, "id", problem, show_value(expected_id))
    return check_goal_id(goal_id, source)


def _checked_objective(objective: str, source: str) -> str:
    expected = f"the goal in words, at most {MAX_OBJECTIVE_CHARS:,} characters"
    if not objective.strip():
        raise invalid(source, "objective", "is empty", expected)
    if len(objective) > MAX_OBJECTIVE_CHARS:
        problem = f"is {len(objective):,} characters long"
        raise invalid(source, "objective", problem, expected)
    return objective


def _checked_owner(owner: str, owner_principals: Collection[str] | None, source: str) -> str:
    # allowed_signers separates fields by whitespace, so a principal cannot hold any; and
    # it is printed bare in messages, so no control or bidi-override characters either.
    if not owner.isprintable() or " " in owner:
        problem = f"{show_value(owner)} is not a principal"
        raise invalid(source, "owner", problem, "a principal from .harness/owners, no spaces")
    if owner_principals is not None and owner not in owner_principals:
        raise invalid(source, "owner", f"{owner} is not listed in .harness/owners")
    return owner


def _build_spec(
    raw: Mapping[str, Any], default_timeout: int, source: str, defaults: Defaults
) -> BuildSpec:
    net = _network(raw, "build", source, defaults)
    return BuildSpec(
        run=command_argv(raw["run"], source, "build.run"),
        timeout_s=_timeout(raw, default_timeout, source, "build"),
        format=raw.get("format", "plain"),
        network=net.shared,
        allow=net.allow,
    )


def _judge_spec(
    raw: Mapping[str, Any], default_timeout: int, source: str, defaults: Defaults
) -> JudgeSpec:
    junit = raw.get("junit")
    net = _network(raw, "judge", source, defaults)
    return JudgeSpec(
        run=command_argv(raw["run"], source, "judge.run"),
        timeout_s=_timeout(raw, default_timeout, source, "judge"),
        junit=None if junit is None else _relative_path(junit, source, "judge.junit"),
        network=net.shared,
        allow=net.allow,
    )


def _step_spec(
    raw: Mapping[str, Any] | None, name: str, default_timeout: int, source: str, defaults: Defaults
) -> StepSpec | None:
    if raw is None:
        return None
    run = command_argv(raw["run"], source, f"{name}.run")
    timeout_s = _timeout(raw, default_timeout, source, name)
    net = _network(raw, name, source, defaults)
    return StepSpec(run=run, timeout_s=timeout_s, network=net.shared, allow=net.allow)


def _network(raw: Mapping[str, Any], step: str, source: str, defaults: Defaults) -> Network:
    """The step's `network`, else the config's `defaults.network.<step>` (shared)."""
    if "network" not in raw:
        return defaults.network.get(step, SHARED)
    return network_from(raw["network"], source, f"{step}.network")


def _timeout(raw: Mapping[str, Any], default: int, source: str, step: str) -> int:
    if "timeout" not in raw:
        return default
    return parse_duration(raw["timeout"], source, f"{step}.timeout")


def command_argv(value: str | list[str], source: str, key: str) -> tuple[str, ...]:
    """argv from a list as given, or from a string split into shell words (no shell runs)."""
    if isinstance(value, list):
        args = tuple(value)
        where = [f"{key}[{index}]" for index in range(len(args))]
    else:
        args = _shell_words(value, source, key)
        where = [key] * len(args)
    for arg, arg_key in zip(args, where, strict=True):
        if "\x00" in arg:  # exec cannot pass it; refuse it here rather than at run time
            raise invalid(source, arg_key, "contains a NUL character", COMMAND_EXPECTED)
    return args


def _shell_words(value: str, source: str, key: str) -> tuple[str, ...]:
    try:
        words = shlex.split(value)
    except ValueError as exc:  # shlex's messages: "No closing quotation", "No escaped ..."
        problem = f"cannot split into shell words: {exc}"
        raise invalid(source, key, problem, COMMAND_EXPECTED) from None
    if not words:
        raise invalid(source, key, "has no words", COMMAND_EXPECTED)
    return tuple(words)


def _expect_files(raw: Mapping[str, Any], source: str) -> tuple[str, ...]:
    files = raw.get("files", [])
    return tuple(
        _relative_path(path, source, f"expect.files[{index}]") for index, path in enumerate(files)
    )


def _expect_globs(raw: Mapping[str, Any], source: str) -> tuple[ExpectGlob, ...]:
    """`expect.globs`: the schema checked the shape; here what it cannot express."""
    found = []
    for index, entry in enumerate(raw.get("globs", [])):
        key = f"expect.globs[{index}]"
        glob = _checked_glob(entry["glob"], source, f"{key}.glob")
        low, high = entry.get("min", 1), entry.get("max")
        if high is not None and high < low:
            problem = f"{high} is less than min {low}"
            raise invalid(source, f"{key}.max", problem, f"a whole number at least min ({low})")
        found.append(ExpectGlob(glob, low, high, entry.get("new", False)))
    return tuple(found)


def _checked_glob(glob: str, source: str, key: str) -> str:
    """A glob anchored at the repository root that can only match the goal's own files."""
    parts = PurePosixPath(glob).parts
    if any(ord(char) < 32 or ord(char) == 127 for char in glob):
        problem = "contains a control character"
    elif glob.startswith("/"):
        problem = f"{show_value(glob)} is an absolute path"
    elif ".." in parts:
        problem = f"{show_value(glob)} leaves the repository through '..'"
    elif parts and parts[0] in HARNESS_TOPS:
        problem = f"{show_value(glob)} is under the harness's own {parts[0]}/"
    else:
        return glob
    raise invalid(source, key, problem, GLOB_EXPECTED)


def _relative_path(path: str, source: str, key: str) -> str:
    """A path that stays inside the worktree it is resolved against."""
    if "\x00" in path:
        problem = "contains a NUL character"
    elif path.startswith("/"):
        problem = f"{show_value(path)} is an absolute path"
    elif ".." in PurePosixPath(path).parts:
        problem = f"{show_value(path)} leaves the repository through '..'"
    else:
        return path
    raise invalid(source, key, problem, RELATIVE_PATH_EXPECTED)
