"""`harness check` refuses an agent command that names a script the repository lacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal


def _check(repo: ManagedRepo) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "check"],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("script", ["./scripts/agent.sh", "scripts/agent.sh", "../agent.sh"])
def test_missing_build_script_is_refused(managed: ManagedFactory, script: str) -> None:
    repo = managed(goal=base_goal() | {"build": {"run": [script, "--go"], "timeout": "60s"}})
    (repo.root.parent / "agent.sh").write_text("#!/bin/sh\n")  # outside: not the repository's
    proc = _check(repo)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout.splitlines()[0] == (
        f"goals/g1.yaml: build.run: '{script}' is not a file in the repository (expected a "
        "script committed with the goal, an absolute path, or a command on PATH)"
    )


def test_missing_plan_script_is_refused(managed: ManagedFactory) -> None:
    goal = base_goal() | {"plan": {"run": ["./plan.sh"], "timeout": "60s"}}
    proc = _check(managed(goal=goal))
    assert proc.returncode == 2
    assert proc.stdout.startswith("goals/g1.yaml: plan.run: './plan.sh' is not a file")


@pytest.mark.parametrize("run", [["./scripts/agent.sh"], ["make", "agent"], [sys.executable]])
def test_present_script_or_path_command_passes(managed: ManagedFactory, run: list[str]) -> None:
    goal = base_goal() | {"build": {"run": run, "timeout": "60s"}}
    repo = managed(goal=goal, files={"scripts/agent.sh": "#!/bin/sh\n"})
    proc = _check(repo)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("ok: 1 goal(s)")
