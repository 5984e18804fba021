"""The pinned agent CLIs (Claude Code, Codex, aider) as `scripts/install-agents` installs them.

The one way the tests find them: the installer writes `agents.env` (`CLAUDE_BIN=…` lines)
into its cache folder ($HARNESS_AGENTS_CACHE, else ~/.cache/goal-harness/agents), and the
paths it names are the pinned binaries. Tests that need a real CLI call `pinned_cli(name)`:
on a developer machine without the tools it skips with the reason; under CI (`CI` set to
anything, tests/tools.py) a missing tool fails the test, so the suite can never pass there
by skipping what it is meant to check.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.tools import need_tool

TOOLS = {"claude": "CLAUDE_BIN", "codex": "CODEX_BIN", "aider": "AIDER_BIN"}


def cache_dir() -> Path:
    configured = os.environ.get("HARNESS_AGENTS_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "goal-harness" / "agents"


def installed(cache: Path) -> dict[str, str]:
    """KEY=value lines of `agents.env`; empty when the installer never ran."""
    try:
        text = (cache / "agents.env").read_text()
    except FileNotFoundError:
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key: value for key, value in pairs}


def binary(name: str, cache: Path) -> Path | None:
    """The tool's installed binary, when the installer named it and it is executable."""
    path = installed(cache).get(TOOLS[name])
    return Path(path) if path and os.access(path, os.X_OK) else None


def pinned_cli(name: str) -> Path:
    """The installed pinned `name`, or skip (fail under CI) saying how to install it."""
    cache = cache_dir()
    found = binary(name, cache)
    if found is not None:
        return found
    need_tool(f"{name} is not installed in {cache} (run scripts/install-agents)")


def bin_dir_with(tmp: Path, names: list[str]) -> Path:
    """A folder holding links to just these pinned CLIs, to put first on PATH.

    Linking rather than adding the install folders keeps aider's venv `python` off PATH.
    """
    folder = tmp / "agent-bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).symlink_to(pinned_cli(name))
    return folder
