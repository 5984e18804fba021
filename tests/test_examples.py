"""This repository's own example goals and example run stay valid, verifiable and replayable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.commands.demo import DEMO_SECRET, GOAL_ID
from tests.agents.templates import template_goal

ROOT = Path(__file__).resolve().parents[1]


def harness(*args: str, secret: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    if secret:
        env["HARNESS_SECRET"] = DEMO_SECRET
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_example_goals_pass_check() -> None:
    proc = harness("check", secret=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = {p.stem for p in (ROOT / "goals").glob("example-*.yaml")}
    assert kinds == {
        "example-claude",
        "example-codex",
        "example-aider",
        "example-script",
        "example-nightly",
    }
    assert proc.stdout.strip().endswith(f"ok: {len(kinds) + 1} goal(s), 1 owner key(s)")


def test_example_ledger_verifies() -> None:
    proc = harness("verify", GOAL_ID)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"ok {GOAL_ID}: 10 events")
    assert "status parked_at_eyes" in proc.stdout


def test_example_report_is_the_replay() -> None:
    replay = harness("replay", GOAL_ID, "--format", "md")
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == (ROOT / "ledger" / GOAL_ID / "report.md").read_text()


def test_example_ledger_refuses_another_secret() -> None:
    env_secret = "not-the-demo-secret-0123456789abcdef0123456789"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "verify", GOAL_ID],
        cwd=ROOT,
        env=env | {"HARNESS_SECRET": env_secret},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3 and "MAC does not match" in proc.stdout


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_example_goals_run_the_templates_command(agent: str) -> None:
    """goals/example-<agent>.yaml runs what `harness new --agent <agent>` writes (aider's
    with the files to edit added at the end)."""
    template = template_goal(agent)["build"]["run"]
    example = yaml.safe_load((ROOT / "goals" / f"example-{agent}.yaml").read_text())
    run = example["build"]["run"]
    if isinstance(template, list):
        assert run[:2] == template[:2] == ["sh", "-c"]
        assert run[2] == template[2] or run[2].startswith(template[2] + " "), run[2]
    else:
        assert run == template
