"""The agent CLIs the harness is tested with, and asking an installed one for its version.

`SUPPORTED` is the one table of them: the command on PATH, the version the conformance
suite pins (`tests/agents/`, installed by `scripts/install-agents`), how to install that
version, and the environment variables the tool reads. The tested range of a tool is its
pinned version's minor line (2.1.332 → every 2.1.x): the suite runs the pinned release,
and a tool's flags and output formats have changed between minor lines (codex dropped
`--full-auto` in 0.147), not within one as far as the suite has seen.

`probe` runs `<cli> --version` through `steps.run_step`, the one place that starts step
commands: with a timeout, bounded capture and the scrubbed environment a step would get,
so what doctor finds is what a build would run.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.loop.steps import child_env, run_step

VERSION_TIMEOUT_S = 20.0  # aider's --version takes ~4 s on a loaded 2-core machine
_VERSION = re.compile(r"\b(\d+)\.(\d+)\.(\d+)\b")


@dataclass(frozen=True)
class AgentCli:
    name: str  # the command on PATH, and the goal template's --agent
    pinned: str  # the version the conformance suite installs and runs
    install: str  # how to install the pinned version
    variables: tuple[str, ...]  # what the tool reads from its environment (never scrubbed)

    @property
    def tested(self) -> str:
        """The tested range: the pinned version's minor line, as `2.1.x`."""
        major, minor, _ = self.pinned.split(".")
        return f"{major}.{minor}.x"

    def in_tested_range(self, version: str) -> bool:
        return version.split(".")[:2] == self.pinned.split(".")[:2]


SUPPORTED: tuple[AgentCli, ...] = (
    AgentCli(
        "claude",
        "2.1.332",
        "npm install -g @anthropic-ai/claude-code@2.1.332",
        (
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_MAX_RETRIES",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "DISABLE_AUTOUPDATER",
            "IS_SANDBOX",
            "HOME",
        ),
    ),
    AgentCli(
        "codex",
        "0.171.0",
        "npm install -g @openai/codex@0.171.0",
        ("CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_HOME", "HOME"),
    ),
    AgentCli(
        "aider",
        "0.86.2",
        "python3 -m venv ~/.aider-venv && ~/.aider-venv/bin/pip install aider-chat==0.86.2",
        ("OPENAI_API_KEY", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "HOME"),
    ),
)


@dataclass(frozen=True)
class Probe:
    cli: AgentCli
    path: Path | None  # None: not on PATH
    version: str | None  # None: not found, or no version read (see `problem`)
    problem: str | None = None  # why no version was read


def parse_version(text: str) -> str | None:
    """The first `X.Y.Z` in what `--version` printed (`2.1.332 (Claude Code)`,
    `codex-cli 0.171.0`, `aider 0.86.2`)."""
    match = _VERSION.search(text)
    return ".".join(match.groups()) if match else None


def probe(
    cli: AgentCli,
    env: Mapping[str, str],
    scrub: Iterable[str],
    cwd: Path,
    timeout_s: float = VERSION_TIMEOUT_S,
) -> Probe:
    """Where `cli` is on the PATH of `env`, and the version it reports."""
    found = shutil.which(cli.name, path=env.get("PATH"))
    if found is None:
        return Probe(cli, None, None)
    path = Path(found)
    result = run_step([found, "--version"], cwd, child_env(env, scrub, {}), b"", timeout_s)
    if result.timed_out:
        return Probe(cli, path, None, f"`--version` did not answer within {timeout_s:g}s")
    version = parse_version(result.stdout_tail) if result.exit_code == 0 else None
    if version is None:
        said = " ".join(result.output_tail.split())[-200:] or "nothing"
        return Probe(cli, path, None, f"`--version` exited {result.exit_code} and said: {said}")
    return Probe(cli, path, version)
