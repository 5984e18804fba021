"""`harness new --agent <tool>`: each template's command checked against the real pinned CLI.

A template that names a flag the tool no longer has fails at the first build, unseen until
then (codex 0.171 exits 2 on `--full-auto`). So every flag a template or an example goal
passes must appear in the pinned tool's own `--help`, or (for a flag the tool hides from
its help) be shown accepted by the tool itself; every literal value given to a flag must
appear in that help too (`acceptEdits`, `workspace-write`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from harness.commands.new import AGENTS, API_HOSTS, NETWORK
from harness.loop.agents.support import SUPPORTED
from harness.model.yamlload import load_yaml
from tests.agents.templates import template_goal
from tests.managed import Key, harness_in
from tests.pinned_agents import pinned_cli

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["claude", "codex", "aider"]
EXAMPLES = {
    "claude": ["example-claude", "example-nightly"],
    "codex": ["example-codex"],
    "aider": ["example-aider"],
}
# Flags a pinned CLI accepts but leaves out of its --help; each is shown accepted below.
HIDDEN = {"claude": {"--max-turns"}}


def _harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    return harness_in(cwd, env, *args)


def _new_repo(tmp_path: Path, key: Key, agent: str) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert _harness(repo, "init", "--owner", "me@example.com", "--key", key.public).returncode == 0
    made = _harness(repo, "new", "g1", "--agent", agent)
    assert made.returncode == 0, made.stderr
    return repo


def _build_run(goal_file: Path) -> list[str]:
    goal = load_yaml(goal_file.read_bytes(), goal_file.name)
    assert isinstance(goal, dict)
    run = goal["build"]["run"]
    assert isinstance(run, (str, list))
    return shlex.split(run) if isinstance(run, str) else [str(word) for word in run]


def tool_words(argv: list[str]) -> list[str]:
    """The tool's own words: `[sh, -c, 'exec claude …']` → `[claude, …]`."""
    if argv[:2] == ["sh", "-c"]:
        argv = shlex.split(argv[2])
    return argv[1:] if argv[0] == "exec" else argv


def flags_and_values(words: list[str]) -> tuple[list[str], list[str]]:
    """Every option the words pass, and every literal value given to one."""
    flags, values = [], []
    for before, word in itertools.pairwise(words):
        if word.startswith("-") and word != "-":
            flags.append(word.split("=", 1)[0])
        elif before.startswith("-") and before != "-" and re.fullmatch(r"[A-Za-z][\w-]*", word):
            values.append(word)
    return flags, values


def subcommands(words: list[str]) -> list[str]:
    """`codex exec --json …` → `[exec]`: the help to read is `codex exec --help`."""
    found = []
    for word in words[1:]:
        if word.startswith("-"):
            break
        found.append(word)
    return found


def _help(tool: str, subs: list[str], tmp_path: Path) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home / "codex")}
    proc = subprocess.run(
        [str(pinned_cli(tool)), *subs, "--help"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def missing_from_help(words: list[str], help_text: str, hidden: set[str]) -> list[str]:
    flags, values = flags_and_values(words)
    absent = [
        flag
        for flag in flags
        if flag not in hidden and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text)
    ]
    return absent + [value for value in values if value not in help_text]


def _check_against_help(words: list[str], tool: str, tmp_path: Path) -> None:
    assert words[0] == tool, words
    help_text = _help(tool, subcommands(words), tmp_path)
    assert missing_from_help(words, help_text, HIDDEN.get(tool, set())) == []


@pytest.mark.parametrize("tool", TOOLS)
def test_template_flags_are_in_the_pinned_clis_help(
    tool: str, tmp_path: Path, owner_key: Key
) -> None:
    repo = _new_repo(tmp_path, owner_key, tool)
    _check_against_help(tool_words(_build_run(repo / "goals" / "g1.yaml")), tool, tmp_path)


@pytest.mark.parametrize("tool", TOOLS)
def test_example_goal_flags_are_in_the_pinned_clis_help(tool: str, tmp_path: Path) -> None:
    for example in EXAMPLES[tool]:
        goal_file = ROOT / "goals" / f"{example}.yaml"
        _check_against_help(tool_words(_build_run(goal_file)), tool, tmp_path)


def test_the_help_check_catches_a_removed_flag(tmp_path: Path) -> None:
    """The issue's own case: codex 0.171 has no --full-auto, and the check says so."""
    words = tool_words(["codex", "exec", "--json", "--full-auto", "-"])
    help_text = _help("codex", subcommands(words), tmp_path)
    assert missing_from_help(words, help_text, set()) == ["--full-auto"]
    words = tool_words(["claude", "-p", "--permission-mode", "acceptAll"])
    assert missing_from_help(words, _help("claude", [], tmp_path), set()) == ["acceptAll"]


def _claude_with(flags: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """claude -p against a closed local port: it parses its options, then fails to connect."""
    home = tmp_path / "claude-home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # discard port: nothing listens
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return subprocess.run(
        [str(pinned_cli("claude")), "-p", "hi", "--output-format", "json", *flags],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_claudes_hidden_max_turns_is_accepted(tmp_path: Path) -> None:
    accepted = _claude_with(["--max-turns", "3", "--max-budget-usd", "0.5"], tmp_path)
    assert "unknown option" not in accepted.stderr, accepted.stderr
    result = json.loads(accepted.stdout)
    assert (result["type"], result["is_error"], result["terminal_reason"]) == (
        "result",
        True,
        "api_error",
    )
    # The same probe tells a flag the tool does not know.
    refused = _claude_with(["--max-turnz", "3"], tmp_path)
    assert refused.returncode == 1
    assert "error: unknown option '--max-turnz'" in refused.stderr


@pytest.mark.parametrize("agent", [*TOOLS, "script"])
def test_each_template_checks_once_objective_and_judge_are_filled(
    agent: str, tmp_path: Path, owner_key: Key
) -> None:
    repo = _new_repo(tmp_path, owner_key, agent)
    goal_file = repo / "goals" / "g1.yaml"
    text = goal_file.read_text()
    placeholder = (
        "  Say what must be true when this goal is done, and how the judge will show it.\n"
    )
    assert placeholder in text and "  run: python -m pytest -q\n" in text
    text = text.replace(placeholder, "  Make tests/test_calc.py pass.\n")
    goal_file.write_text(text.replace("  run: python -m pytest -q\n", "  run: pytest -q tests\n"))
    if agent == "script":  # the template writes the stub its build names, so check passes
        assert (repo / "scripts" / "agent.sh").is_file()
    proc = _harness(repo, "check", "g1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "note: goals/g1.yaml: not approved yet (run `harness approve g1 --key KEY`)",
        "ok: 1 goal(s), 1 owner key(s)",
    ]


@pytest.mark.parametrize("tool", TOOLS)
def test_each_agents_guide_page_shows_its_template_and_tested_version(tool: str) -> None:
    page = (ROOT / "docs" / "guide" / "agents" / f"{tool}.md").read_text()
    run, fmt, _ = AGENTS[tool]
    assert f"build:\n  run:{run}\n  timeout: 30m\n  format: {fmt}\n" in page
    [cli] = [c for c in SUPPORTED if c.name == tool]
    assert f" {cli.pinned}**" in page  # "**Claude Code 2.1.332**"
    assert f"**{cli.tested}**" in page
    index = (ROOT / "docs" / "guide" / "README.md").read_text()
    assert f"(agents/{tool}.md)" in index


@pytest.mark.parametrize("tool", TOOLS)
def test_each_template_lets_its_build_reach_its_model_api_alone(tool: str) -> None:
    # The allowlist the template writes, and the guide page shows it as written (issue 32).
    build = template_goal(tool)["build"]
    assert build["network"] == {"allow": [API_HOSTS[tool]]}
    page = (ROOT / "docs" / "guide" / "agents" / f"{tool}.md").read_text()
    assert NETWORK.format(host=API_HOSTS[tool], agent=tool) + "\n```" in page
    assert "## The network: its model API alone" in page
    example = load_yaml((ROOT / "goals" / f"example-{tool}.yaml").read_bytes(), "example")
    assert isinstance(example, dict)
    assert example["build"]["network"] == {"allow": [API_HOSTS[tool]]}


def test_the_script_template_shares_the_network() -> None:
    assert "network" not in template_goal("script")["build"]
