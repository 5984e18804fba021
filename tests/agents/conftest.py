"""The conformance suite's fixtures: the installed agent CLIs, isolated homes, the server.

A tool that is not installed skips its tests with the reason, except under CI (`CI` set
to anything, tests/tools.py), where a skip would hide that the suite did not run: there it
fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.commands.new import API_HOSTS
from tests.agents import tools
from tests.agents.scenario import JUDGE_WITH_URL, Scenario
from tests.agents.templates import resumed, shell_line, template_goal, with_files
from tests.fakes.script import Script
from tests.fakes.server import ModelServer
from tests.managed import ManagedFactory, base_goal
from tests.pinned_agents import cache_dir, pinned_cli

ScenarioFactory = Callable[..., Scenario]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(Script()) as running:
        yield running


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh HOME below the agents' cache folder (not under /tmp: codex refuses that)."""
    base = cache_dir() / "test-homes"
    base.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix="home-", dir=base))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _tool_env(
    tool: str, binary: Path, home: Path, server: ModelServer, egress: bool
) -> dict[str, str]:
    """`egress`: the build runs with its template's allowlist, so the tool is pointed at
    the server by its model API's name, which only the proxy resolves (tools.egress_env)."""
    bin_dir = home / "bin"  # the tool alone on PATH, not its venv's python
    bin_dir.mkdir()
    (bin_dir / tool).symlink_to(binary)
    env = {"HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env |= tools.no_outbound(server) | {"TEST_DOCS_URL": server.url + "/docs/value-page"}
    url = server.url
    if egress:
        url, hook = tools.egress_env(API_HOSTS[tool], server)
        env |= hook
    if tool == "claude":
        return env | tools.claude_env(home, url)
    if tool == "codex":
        return env | tools.codex_env(home, url)
    return env | tools.aider_env(home, url, binary)


def contained_config(tool: str, tmp_path: Path, home: Path, extra: str = "") -> str:
    """`.harness/config.yaml` for a run with the sandbox required, binding what a runner
    binds for the tool (docs/guide/agents/<tool>.md) and the test's counter folder (where
    its judge counts). Inside, HOME is the goal's own home."""
    binds = [f"rw:{tmp_path / 'counters'}", *TOOL_BINDS[tool](home)]
    return f"version: 1\nsandbox: required\nsandbox_binds: {binds}\n{extra}"


# claude needs nothing of the runner's home (its key is in the environment); codex its
# CODEX_HOME (config.toml, sessions), written; aider its price cache in ~/.aider, written.
TOOL_BINDS: dict[str, Callable[[Path], list[str]]] = {
    "claude": lambda home: [],
    "codex": lambda home: [f"rw:{home / 'codex'}"],
    "aider": lambda home: ["rw:~/.aider"],
}


def _scenario_factory(
    tool: str, managed: ManagedFactory, server: ModelServer, home: Path, tmp_path: Path
) -> ScenarioFactory:
    binary = pinned_cli(tool)

    def make(
        *,
        resume: bool = False,
        budget: dict[str, Any] | None = None,
        halt: dict[str, Any] | None = None,
        timeout: str | None = None,
        files: dict[str, str] | None = None,
        contained: str | None = None,
        flags: str = "",
    ) -> Scenario:
        goal = goal_for(tool, resume=resume, timeout=timeout, flags=flags)
        if contained is None:  # the template's allowlist needs the sandbox (sandbox.md)
            del goal["build"]["network"]
        goal["budget"] |= budget or {}
        goal["halt"] |= halt or {}
        repo_files = {"value.txt": "unset\n", "judge.py": JUDGE_WITH_URL, **(files or {})}
        if contained is not None:  # the rest of the config, the sandbox required
            repo_files[".harness/config.yaml"] = contained_config(tool, tmp_path, home, contained)
        repo = managed(goal=goal, files=repo_files)
        repo.env.update(_tool_env(tool, binary, home, server, contained is not None))
        return Scenario(repo, server, home)

    return make


def goal_for(
    tool: str, *, resume: bool = False, timeout: str | None = None, flags: str = ""
) -> dict[str, Any]:
    """`harness new --agent <tool>`'s goal with the suite's objective and judge; `flags`
    (shell words) added to the tool's command line."""
    goal = template_goal(tool)
    build = goal["build"]
    if flags:
        build = build | {"run": ["sh", "-c", f"{shell_line(build)} {flags}"]}
    if tool == "aider":
        build = with_files(build, ("value.txt",))
    if resume:
        build = resumed(tool, build)
    if timeout is not None:
        build = build | {"timeout": timeout}
    test = base_goal()
    return goal | {"objective": test["objective"], "judge": test["judge"], "build": build}


@pytest.fixture
def claude(
    managed: ManagedFactory, server: ModelServer, home: Path, tmp_path: Path
) -> ScenarioFactory:
    return _scenario_factory("claude", managed, server, home, tmp_path)


@pytest.fixture
def codex(
    managed: ManagedFactory, server: ModelServer, home: Path, tmp_path: Path
) -> ScenarioFactory:
    return _scenario_factory("codex", managed, server, home, tmp_path)


@pytest.fixture
def aider(
    managed: ManagedFactory, server: ModelServer, home: Path, tmp_path: Path
) -> ScenarioFactory:
    return _scenario_factory("aider", managed, server, home, tmp_path)
