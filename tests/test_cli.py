"""The command line as a user meets it: help everywhere, templates that check, exit codes."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.cli import cli
from tests.managed import Key

ROOT = Path(__file__).resolve().parents[1]


def _commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


COMMANDS = list(_commands())


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_has_help_with_an_example(words: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_appears_in_the_docs(words: tuple[str, ...]) -> None:
    docs = (ROOT / "docs" / "specs" / "cli.md").read_text()
    assert re.search(rf"`harness {' '.join(words)}\b", docs), (
        f"harness {' '.join(words)} is not in docs/specs/cli.md"
    )


@pytest.mark.parametrize("agent", ["claude", "codex", "aider", "script"])
def test_new_templates_pass_check(tmp_path: Path, agent: str, owner_key: Key) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness", *args], cwd=tmp_path, capture_output=True, text=True
        )

    assert harness("init", "--owner", "me@example.com", "--key", owner_key.public).returncode == 0
    assert harness("new", "g1", "--agent", agent).returncode == 0
    # The script template writes the stub it names (issue 30 item 13), the others none.
    assert (tmp_path / "scripts" / "agent.sh").exists() is (agent == "script")
    proc = harness("check", "g1")
    assert proc.returncode == 0, proc.stdout
    text = (tmp_path / "goals" / "g1.yaml").read_text()
    assert "owner: me@example.com" in text
    assert harness("new", "g1").returncode == 2


def test_unknown_command_and_bad_option_are_usage_errors() -> None:
    assert CliRunner().invoke(cli, ["frobnicate"]).exit_code == 2
    assert CliRunner().invoke(cli, ["run", "--max-steps", "zero"]).exit_code == 2


def test_invalid_goal_id_is_exit_2_and_creates_nothing(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for bad in ("../x", "a/b", "UPPER", "-x", "a" * 64):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "new", bad],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, (bad, proc.stderr)
    assert not (tmp_path / "goals").exists()
