""".harness/config.yaml: the human-owned settings read from the control branch.

Every key is optional; a missing file or an empty one means DEFAULT_CONFIG. The control
ref's own default (the branch checked out in the main worktree) is resolved by the
caller, so `control_ref` stays None here when the file does not name one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from harness.errors import invalid
from harness.model import yamlutil
from harness.model.cache import ParsedCache
from harness.model.limits import Budget, Defaults, Halt, budget_from, halt_from, parse_duration
from harness.model.network import network_from
from harness.model.wording import show_value

MAX_CONFIG_FILE_BYTES = 256 * 1024
_MAX_ENTRY_BYTES = 4 * MAX_CONFIG_FILE_BYTES  # a config's mapping as JSON, with room to spare
SCHEMA = "config.schema.json"
DESTRUCTIVE_CLASSES = (
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

SandboxMode = Literal["auto", "required", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
RW_PREFIX = "rw:"  # a sandbox_binds entry a contained step may write

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What git check-ref-format refuses anywhere in a name: controls, space, ~ ^ : ? * [ \.
_REF_FORBIDDEN_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


@dataclass(frozen=True)
class DestructiveRule:
    """An extra destructive-class rule: a change matching a path glob or line regex."""

    cls: str
    paths: tuple[str, ...]
    lines: tuple[str, ...]
    enforce: str = "block"  # "warn": a hit is recorded as warned and does not park


@dataclass(frozen=True)
class Config:
    control_ref: str | None
    branch_prefix: str
    defaults: Defaults
    scrub_env: tuple[str, ...]
    destructive: tuple[DestructiveRule, ...]
    prices: Prices | None = None
    sandbox: SandboxMode | None = None  # None: not named; the runner's default applies
    sandbox_binds: tuple[Bind, ...] = ()  # the runner's paths a contained step sees
    notify: Notify | None = None  # who is told of a goal's transitions (loop/notify.py)
    # Variables whose values are redacted from every record and line, beside those whose
    # names say secret (trust/redact.py).
    redact_env: tuple[str, ...] = ()

    def notify_variables(self) -> tuple[str, ...]:
        return self.notify.variables() if self.notify is not None else ()

    def step_scrub(self) -> tuple[str, ...]:
        """What no step sees: `scrub_env` and the notifier's variables (a webhook URL is a
        credential: a build that had it could post as the harness)."""
        return tuple(dict.fromkeys([*self.scrub_env, *self.notify_variables()]))

    def redacted(self) -> tuple[str, ...]:
        """`redact_env` and the notifier's variables: their values never reach a record."""
        return tuple(dict.fromkeys([*self.redact_env, *self.notify_variables()]))


@dataclass(frozen=True)
class Bind:
    """One `sandbox_binds` entry: a path of the runner's a contained step sees, read-only
    unless the entry says `rw:` (a writable `~/.claude` would let a build write a hook into
    the runner's own settings)."""

    path: str  # ~/… (the runner's home) or absolute
    writable: bool = False

    def __str__(self) -> str:
        """The entry as the config spells it."""
        return f"{RW_PREFIX}{self.path}" if self.writable else self.path


@dataclass(frozen=True)
class Notify:
    webhook: str | None  # a URL, or $NAME (the URL in the runner's environment)
    command: tuple[str, ...] | None  # argv; a string is split into shell words
    timeout_s: int = 10
    env: tuple[str, ...] = ()  # more variables the command reads (a token): never the steps'

    def variables(self) -> tuple[str, ...]:
        """Every environment variable the notifier reads: the webhook's $NAME, then `env`.
        The runner must have them (`ci cron|systemd` pass them in); no step ever sees them."""
        named = (self.webhook[1:],) if self.webhook and self.webhook.startswith("$") else ()
        return tuple(dict.fromkeys([*named, *self.env]))


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, for agents that report tokens but no cost (codex-jsonl)."""

    input_usd_per_million: float = 0.0
    cached_input_usd_per_million: float = 0.0
    output_usd_per_million: float = 0.0

    def cost(self, input_tokens: int, cached_input_tokens: int, output_tokens: int) -> float:
        # Cached input tokens are part of input tokens in codex's usage; priced apart here.
        fresh = max(0, input_tokens - cached_input_tokens)
        total = (
            fresh * self.input_usd_per_million
            + cached_input_tokens * self.cached_input_usd_per_million
            + output_tokens * self.output_usd_per_million
        )
        return total / 1_000_000


DEFAULT_DEFAULTS = Defaults(
    budget=Budget(max_iterations=3, max_seconds=2 * 3600, max_cost_usd=20.0, max_turns=300),
    halt=Halt(no_progress_passes=2, max_passes=50),
    timeouts=MappingProxyType(
        {"build": 30 * 60, "judge": 10 * 60, "review": 10 * 60, "plan": 10 * 60, "ship": 10 * 60}
    ),
)
DEFAULT_CONFIG = Config(
    control_ref=None,
    branch_prefix="harness/",
    defaults=DEFAULT_DEFAULTS,
    scrub_env=(),
    destructive=(),
)


def parse_config(data: bytes | None, source: str, cache: ParsedCache | None = None) -> Config:
    """Validate .harness/config.yaml's bytes; None (no file) gives DEFAULT_CONFIG.

    With a `cache`, bytes validated before are not parsed again (model/cache.py)."""
    if data is None:
        return DEFAULT_CONFIG
    raw = cache.recall(data) if cache is not None else None
    if raw is not None:
        return _config_from(raw, source)
    yamlutil.check_size(data, MAX_CONFIG_FILE_BYTES, source)
    document = yamlutil.load_yaml(data, source)
    if document is None:  # only comments, or nothing: every setting at its default
        return DEFAULT_CONFIG
    raw = yamlutil.expect_mapping(document, source)
    yamlutil.validate(raw, SCHEMA, source)
    config = _config_from(raw, source)
    if cache is not None:
        cache.remember(data, raw)
    return config


def config_cache(folder: Path, key: bytes) -> ParsedCache:
    """Configs validated before, in `folder` (model/cache.py): the default ref's and the
    control ref's, and a change or two."""
    return ParsedCache(folder, key, "config", SCHEMA, _MAX_ENTRY_BYTES, keep=4)


def _config_from(raw: Mapping[str, Any], source: str) -> Config:
    control_ref = raw.get("control_ref")
    return Config(
        control_ref=None if control_ref is None else _checked_ref(control_ref, source),
        branch_prefix=_checked_prefix(raw.get("branch_prefix", "harness/"), source),
        defaults=_defaults_from(raw.get("defaults", {}), source),
        scrub_env=_env_names(raw.get("scrub_env", []), source, "scrub_env"),
        redact_env=_env_names(raw.get("redact_env", []), source, "redact_env"),
        destructive=tuple(
            _rule(rule, source, f"destructive[{index}]")
            for index, rule in enumerate(raw.get("destructive", []))
        ),
        prices=Prices(**{k: float(v) for k, v in raw["prices"].items()})
        if "prices" in raw
        else None,
        sandbox=_sandbox_mode(raw.get("sandbox"), source),
        sandbox_binds=tuple(
            _bind(path, source, f"sandbox_binds[{index}]")
            for index, path in enumerate(raw.get("sandbox_binds", []))
        ),
        notify=_notify(raw["notify"], source) if "notify" in raw else None,
    )


def _notify(raw: Mapping[str, Any], source: str) -> Notify:
    webhook = raw.get("webhook")
    if webhook is not None and not (
        webhook.startswith(("http://", "https://"))
        or (_ENV_NAME_RE.fullmatch(webhook.removeprefix("$")) and webhook.startswith("$"))
    ):
        problem = f"{show_value(webhook)} is not a webhook URL"
        raise invalid(source, "notify.webhook", problem, "an http:// or https:// URL, or $NAME")
    command = raw.get("command")
    argv: tuple[str, ...] | None = None
    if command is not None:
        try:
            argv = tuple(shlex.split(command) if isinstance(command, str) else command)
        except ValueError as exc:
            raise invalid(source, "notify.command", str(exc), "shell words or a list") from None
        if not argv:
            raise invalid(source, "notify.command", "is empty", "a command")
    if webhook is None and argv is None:
        raise invalid(source, "notify", "names no webhook and no command", "webhook or command")
    timeout = parse_duration(raw.get("timeout", 10), source, "notify.timeout")
    return Notify(webhook, argv, timeout, _env_names(raw.get("env", []), source, "notify.env"))


def _bind(entry: str, source: str, key: str) -> Bind:
    path = entry.removeprefix(RW_PREFIX)
    parts = path.split("/")
    if not path.startswith(("~/", "/")) or ".." in parts or "\x00" in path or path in ("~/", "/"):
        problem = f"{show_value(entry)} is not a path to bind"
        expected = "~/<path> or an absolute path without .., read-only, or writable as rw:<path>"
        raise invalid(source, key, problem, expected)
    return Bind(path, writable=entry.startswith(RW_PREFIX))


def _sandbox_mode(value: object, source: str) -> SandboxMode | None:
    if value is None:
        return None
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise invalid(
        source, "sandbox", f"{show_value(value)} is not a sandbox mode", "auto, required or off"
    )


def _defaults_from(raw: Mapping[str, Any], source: str) -> Defaults:
    builtin = DEFAULT_DEFAULTS
    timeouts = dict(builtin.timeouts)
    for step, value in raw.get("timeouts", {}).items():
        timeouts[step] = parse_duration(value, source, f"defaults.timeouts.{step}")
    network = {
        step: network_from(value, source, f"defaults.network.{step}")
        for step, value in raw.get("network", {}).items()
    }
    return Defaults(
        budget=budget_from(raw.get("budget", {}), builtin.budget, source, "defaults.budget"),
        halt=halt_from(raw.get("halt", {}), builtin.halt, source, "defaults.halt"),
        timeouts=MappingProxyType(timeouts),
        network=MappingProxyType(network),
    )


def valid_ref_name(name: str) -> bool:
    """A conservative subset of git's branch-name rules, and never an option (`-x`)."""
    if name.startswith(("-", "/")) or name.endswith(("/", ".")) or name == "@":
        return False
    if _REF_FORBIDDEN_RE.search(name) or any(bad in name for bad in ("..", "@{", "//")):
        return False
    parts = name.split("/")
    return not any(part.startswith(".") or part.endswith(".lock") for part in parts)


def _checked_ref(name: str, source: str) -> str:
    if not valid_ref_name(name):
        problem = f"{show_value(name)} is not a valid git branch name"
        raise invalid(source, "control_ref", problem, "a git branch name such as main")
    return name


def _checked_prefix(prefix: str, source: str) -> str:
    # A prefix is good when it makes a good branch name with any goal id after it.
    if not valid_ref_name(prefix + "x"):
        problem = f"{show_value(prefix)} does not make valid git branch names"
        raise invalid(source, "branch_prefix", problem, "a prefix such as harness/")
    return prefix


def _env_names(names: list[str], source: str, key: str) -> tuple[str, ...]:
    for index, name in enumerate(names):
        if not _ENV_NAME_RE.fullmatch(name):
            problem = f"{show_value(name)} is not an environment variable name"
            expected = "letters, digits and '_', not starting with a digit"
            raise invalid(source, f"{key}[{index}]", problem, expected)
    return tuple(names)


def _rule(raw: Mapping[str, Any], source: str, key: str) -> DestructiveRule:
    paths = tuple(raw.get("paths", []))
    lines = tuple(raw.get("lines", []))
    enforce = raw.get("enforce", "block")
    if enforce == "warn" and not paths and not lines:
        problem = (
            f"'warn' with neither paths nor lines would make the built-in class {raw['class']} warn"
        )
        expected = (
            "block: the ten built-in classes always block; warn only on a rule's own paths or lines"
        )
        raise invalid(source, f"{key}.enforce", problem, expected)
    if not paths and not lines:
        problem = "rule has neither paths nor lines"
        raise invalid(source, key, problem, "at least one path glob or line regex")
    for index, pattern in enumerate(lines):
        _check_regex(pattern, source, f"{key}.lines[{index}]")
    return DestructiveRule(cls=raw["class"], paths=paths, lines=lines, enforce=enforce)


def _check_regex(pattern: str, source: str, key: str) -> None:
    try:
        re.compile(pattern)
    # re raises OverflowError for huge repeat counts and RecursionError for very deep
    # nesting; both are this pattern's fault, not the harness's.
    except (re.error, OverflowError, RecursionError) as exc:
        problem = f"{show_value(pattern)} does not compile: {exc}"
        raise invalid(source, key, problem, "a Python regular expression") from None
