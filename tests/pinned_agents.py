"""The pinned agent CLIs (Claude Code, Codex, aider) as `scripts/install-agents` installs them.

Tests that need a real CLI call `pinned_cli(name)`: on a developer machine without the
tools it skips with the reason; under CI (`CI=true`) a missing tool fails the test, so the
suite can never pass there by skipping what it is meant to check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

AGENTS_DIR = Path(
    os.environ.get("HARNESS_AGENTS_CACHE", "~/.cache/goal-harness/agents")
).expanduser()
BIN_DIRS = {
    "claude": AGENTS_DIR / "npm" / "node_modules" / ".bin",
    "codex": AGENTS_DIR / "npm" / "node_modules" / ".bin",
    "aider": AGENTS_DIR / "aider" / "bin",
}


def pinned_cli(name: str) -> Path:
    """The installed pinned `name`, or skip (fail under CI) saying how to install it."""
    path = BIN_DIRS[name] / name
    if os.access(path, os.X_OK):
        return path
    reason = f"{name} is not installed at {path}: run scripts/install-agents"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing agent CLI is a failure, not a skip)")
    pytest.skip(reason)


def bin_dir_with(tmp: Path, names: list[str]) -> Path:
    """A folder holding links to just these pinned CLIs, to put first on PATH.

    Linking rather than adding the install folders keeps aider's venv `python` off PATH.
    """
    folder = tmp / "agent-bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).symlink_to(pinned_cli(name))
    return folder
