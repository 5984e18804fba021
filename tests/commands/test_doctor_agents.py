"""`harness doctor`'s agent check, with the real pinned CLIs on PATH and without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.commands.doctor import run_checks
from tests.pinned_agents import bin_dir_with

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _agent_lines(cwd: Path, env: dict[str, str]) -> list[tuple[str, str, str, str | None]]:
    return [
        (f.check, f.status, f.finding, f.fix)
        for f in run_checks(cwd, env)
        if f.check.startswith("agent ")
    ]


def test_doctor_names_each_pinned_cli_and_its_version(tmp_path: Path) -> None:
    bin_dir = bin_dir_with(tmp_path, ["claude", "codex", "aider"])
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(home)}
    assert _agent_lines(tmp_path, env) == [
        ("agent claude", "ok", f"2.1.332 at {bin_dir}/claude (tested: 2.1.x)", None),
        ("agent codex", "ok", f"0.171.0 at {bin_dir}/codex (tested: 0.171.x)", None),
        ("agent aider", "ok", f"0.86.2 at {bin_dir}/aider (tested: 0.86.x)", None),
    ]


def test_doctor_says_which_clis_are_not_on_path(tmp_path: Path) -> None:
    env = {"PATH": SYSTEM_PATH, "HOME": str(tmp_path)}
    assert _agent_lines(tmp_path, env) == [
        (f"agent {name}", "ok", f"not on PATH (only goals that run {name} need it)", None)
        for name in ("claude", "codex", "aider")
    ]


def _fake(folder: Path, name: str, body: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(f"#!{sys.executable}\n{body}")
    (folder / name).chmod(0o755)


def test_a_version_outside_the_tested_range_warns_with_the_install_line(tmp_path: Path) -> None:
    # An old codex cannot be installed offline; a script prints what codex 0.150 prints.
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "codex", "print('codex-cli 0.150.0')\n")
    _fake(
        bin_dir,
        "aider",
        "import sys\nprint('aider: bad interpreter', file=sys.stderr)\nsys.exit(1)\n",
    )
    env = {"PATH": f"{bin_dir}:{SYSTEM_PATH}", "HOME": str(tmp_path)}
    _, codex, aider = _agent_lines(tmp_path, env)
    assert codex == (
        "agent codex",
        "warn",
        f"0.150.0 at {bin_dir}/codex is outside the tested range 0.171.x",
        "install the tested version: npm install -g @openai/codex@0.171.0 "
        "(see docs/guide/agents/codex.md)",
    )
    assert aider[:3] == (
        "agent aider",
        "warn",
        f"{bin_dir}/aider: `--version` exited 1 and said: aider: bad interpreter",
    )


def test_doctor_json_and_text_carry_the_agent_lines(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "claude", "print('2.0.1 (Claude Code)')\n")
    env = {"PATH": f"{bin_dir}:{SYSTEM_PATH}", "HOME": str(tmp_path)}
    run = [sys.executable, "-m", "harness", "doctor"]
    text = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    lines = text.stdout.splitlines()
    warn = f"warn agent claude: 2.0.1 at {bin_dir}/claude is outside the tested range 2.1.x"
    assert lines[lines.index(warn) + 1] == (
        "  fix: install the tested version: npm install -g @anthropic-ai/claude-code@2.1.332 "
        "(see docs/guide/agents/claude.md)"
    )
    assert "ok agent codex: not on PATH (only goals that run codex need it)" in lines
    out = subprocess.run(
        [*run, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    claude = next(f for f in json.loads(out.stdout) if f["check"] == "agent claude")
    assert claude["status"] == "warn"
