"""`harness demo`: the scripted agent fails once, is repaired, passes, and parks at ship."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_fails_once_repairs_and_parks_at_ship(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "demo", "--dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    order = [
        "build[1] done",
        "judge[1] fail",
        "failing=test_calc.CalcTest.test_add_negative",
        "build[2] done",
        "judge[2] pass",
        "parked_at_eyes gate=ship",
    ]
    positions = [out.index(text) for text in order]
    assert positions == sorted(positions)
    assert "ship[" not in out
    worktree = tmp_path / "d" / "repo" / ".harness" / "worktrees" / "fix-calc-add"
    assert not (worktree / "SHIPPED").exists()
    assert (worktree / "calc.py").read_text().endswith("return a + b\n")
    assert "harness ship fix-calc-add --key" in out
    assert "| status | parked_at_eyes |" in out


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "is not empty" in proc.stderr


def test_demo_next_steps_work_without_harness_on_path(tmp_path: Path) -> None:
    """The printed "what a human types next" lines, typed into a shell whose PATH has no
    `harness` (a venv never activated): each works, up to the signed ship."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "demo", "--dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    typed = proc.stdout.split("== what a human types next\n", 1)[1]
    assert "\nharness " not in typed
    shell_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HARNESS_SANDBOX": "off"}
    script = "set -e\n" + typed
    done = subprocess.run(
        ["sh", "-c", script],
        cwd=tmp_path,
        env=shell_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fix-calc-add parked_at_eyes step=- " in done.stdout
    assert done.stdout.rstrip().endswith("fix-calc-add #14 completed (shipped)")
