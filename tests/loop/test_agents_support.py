"""The agent CLI table, reading versions, and the environment an agent gets through the harness."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from harness.loop.agents.support import SUPPORTED, AgentCli, parse_version, probe
from harness.loop.steps import child_env, run_step

BY_NAME = {cli.name: cli for cli in SUPPORTED}


def test_the_table_names_the_pinned_versions_and_their_tested_ranges() -> None:
    assert [(c.name, c.pinned, c.tested) for c in SUPPORTED] == [
        ("claude", "2.1.332", "2.1.x"),
        ("codex", "0.171.0", "0.171.x"),
        ("aider", "0.86.2", "0.86.x"),
    ]


@pytest.mark.parametrize(
    ("name", "version", "tested"),
    [
        ("claude", "2.1.332", True),
        ("claude", "2.1.0", True),
        ("claude", "2.2.0", False),
        ("claude", "1.1.332", False),
        ("codex", "0.171.9", True),
        ("codex", "0.147.0", False),
        ("aider", "0.86.0", True),
        ("aider", "0.85.2", False),
    ],
)
def test_tested_range_is_the_pinned_minor_line(name: str, version: str, tested: bool) -> None:
    assert BY_NAME[name].in_tested_range(version) is tested


@pytest.mark.parametrize(
    ("printed", "version"),
    [
        ("2.1.332 (Claude Code)\n", "2.1.332"),  # what the pinned tools print, verbatim
        ("codex-cli 0.171.0\n", "0.171.0"),
        ("aider 0.86.2\n", "0.86.2"),
        ("version: unknown\n", None),
        ("", None),
    ],
)
def test_parse_version(printed: str, version: str | None) -> None:
    assert parse_version(printed) == version


def _script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def test_probe_runs_version_in_the_scrubbed_environment(tmp_path: Path) -> None:
    seen = tmp_path / "env.json"
    body = f"import json, os\nopen({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\nprint('codex-cli 0.171.0')\n"
    _script(tmp_path / "bin", "codex", body)
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "HARNESS_SECRET": "s" * 40,
        "CODEX_HOME": "/srv/codex",
        "TEAM_TOKEN": "scrubbed-by-config",
    }
    found = probe(BY_NAME["codex"], env, ["TEAM_TOKEN"], tmp_path)
    assert (found.path, found.version, found.problem) == (
        tmp_path / "bin" / "codex",
        "0.171.0",
        None,
    )
    child = json.loads(seen.read_text())
    assert child["CODEX_HOME"] == "/srv/codex"
    assert "HARNESS_SECRET" not in child and "TEAM_TOKEN" not in child


def test_probe_reports_a_cli_that_fails_or_hangs(tmp_path: Path) -> None:
    _script(tmp_path / "bin", "aider", "import sys\nprint('boom: no module')\nsys.exit(3)\n")
    _script(tmp_path / "bin", "claude", "import time\ntime.sleep(30)\n")
    env = {"PATH": str(tmp_path / "bin")}
    failed = probe(BY_NAME["aider"], env, [], tmp_path)
    assert (failed.version, failed.problem) == (
        None,
        "`--version` exited 3 and said: boom: no module",
    )
    hung = probe(BY_NAME["claude"], env, [], tmp_path, timeout_s=0.5)
    assert (hung.version, hung.problem) == (None, "`--version` did not answer within 0.5s")
    absent = probe(AgentCli("nosuchagent", "1.0.0", "", ()), env, [], tmp_path)
    assert (absent.path, absent.version, absent.problem) == (None, None, None)


def test_every_agent_variable_reaches_a_step_and_no_secret_does(tmp_path: Path) -> None:
    """API keys, base URLs, CODEX_HOME, IS_SANDBOX…: not secret to the harness, passed through."""
    variables = sorted({name for cli in SUPPORTED for name in cli.variables})
    base = {name: f"value-of-{name}" for name in variables}
    base |= {"PATH": os.environ["PATH"], "HARNESS_SECRET": "s" * 40, "SSH_AUTH_SOCK": "/x"}
    env = child_env(base, (), {"HARNESS_STEP": "build"})
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    result = run_step([sys.executable, "-c", dump], tmp_path, env, b"", 30)
    child = json.loads(result.stdout_tail)
    assert {name: child.get(name) for name in variables} == {
        name: f"value-of-{name}" for name in variables
    }
    assert "HARNESS_SECRET" not in child and "SSH_AUTH_SOCK" not in child
    assert "ANTHROPIC_API_KEY" in variables and "OPENAI_API_KEY" in variables
