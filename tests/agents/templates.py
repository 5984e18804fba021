"""Each tool's goal as `harness new --agent <tool>` writes it, for the suite to run.

The suite does not keep build commands of its own: the build section is read from the file
the real `new` command generates, so what is tested is what a user gets. A test changes
only the objective and the judge (and budget, halt or the build's timeout where its
scenario needs them); the environment a tool needs (HOME, CODEX_HOME, API base URL and key,
aider's price cache) is the test's, set around the run (tests/agents/tools.py).
"""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness.commands.new import new
from tests.managed import OWNER

# Any well-formed ed25519 key: `new` only reads the owners file for its first principal.
OWNERS_LINE = (
    f"{OWNER} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9ZcHh0kQ6nqlqS0tPn6q1QJ1mH7xX5c8K0q9Q8lq8R\n"
)


def template_goal(tool: str, goal_id: str = "g1") -> dict[str, Any]:
    """The goal file `harness new <goal_id> --agent <tool>` writes, parsed."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["git", "init", "-q", scratch], check=True)
        (Path(scratch) / ".harness").mkdir()
        (Path(scratch) / ".harness" / "owners").write_text(OWNERS_LINE)
        new(Path(scratch), goal_id, io.StringIO(), agent=tool)
        loaded = yaml.safe_load((Path(scratch) / "goals" / f"{goal_id}.yaml").read_text())
    assert isinstance(loaded, dict) and loaded["owner"] == OWNER, loaded
    return loaded


def shell_line(build: dict[str, Any]) -> str:
    """The command line of a template's `run: [sh, -c, <line>]`."""
    run = build["run"]
    assert run[:2] == ["sh", "-c"] and len(run) == 3, run
    return str(run[2])


def with_files(build: dict[str, Any], files: tuple[str, ...]) -> dict[str, Any]:
    """aider's template, with the files it may edit named at the end, as its comment says."""
    return build | {"run": ["sh", "-c", " ".join([shell_line(build), *files])]}


def resumed(tool: str, build: dict[str, Any]) -> dict[str, Any]:
    """The template's build, resuming the newest session of the worktree.

    claude: `--continue`; codex: `exec … resume --last -`, after `--sandbox`, because
    `exec resume` has no --sandbox of its own. Each starts a session when there is none.
    """
    if tool == "claude":
        return build | {"run": ["sh", "-c", shell_line(build) + " --continue"]}
    if tool == "codex":
        words = str(build["run"]).split()
        assert words[-1] == "-", words
        return build | {"run": [*words[:-1], "resume", "--last", "-"]}
    raise ValueError(f"{tool} has no resume in the suite")
