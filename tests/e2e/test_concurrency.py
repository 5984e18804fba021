"""One machine, many processes: locks, --jobs, cancel of a running goal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import yaml

from tests.managed import ManagedFactory, alive, base_goal, git, wait_for


def test_four_concurrent_runs_run_each_step_once(managed: ManagedFactory) -> None:
    repo = managed()
    procs = [repo.spawn("run") for _ in range(4)]
    codes = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        codes.append(proc.returncode)
        assert proc.returncode in (0, 4), err
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "2"] and repo.count("judge") == ["1", "2"]


def test_busy_goal_is_reported_and_exit_4_when_all_are_busy(managed: ManagedFactory) -> None:
    repo = managed()
    holder, _ = repo.start_hanging_run()
    proc = repo.harness("run", check=4)
    assert "g1: busy" in proc.stderr
    holder.send_signal(signal.SIGTERM)
    holder.communicate(timeout=30)


def test_jobs_advances_goals_in_parallel(managed: ManagedFactory) -> None:
    repo = managed()
    for goal_id in ("g2", "g3"):
        goal = base_goal(goal_id)
        (repo.root / "goals" / f"{goal_id}.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
        repo.harness("approve", goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "two more goals")
    out = repo.harness("run", "--jobs", "3", check=0).stdout
    for goal_id in ("g1", "g2", "g3"):
        assert f" {goal_id} #" in out
        replay = repo.harness("replay", goal_id, check=0).stdout
        assert set(replay.splitlines()) <= set(out.splitlines())
    rows = {
        r["id"]: r["status"] for r in json.loads(repo.harness("status", "--json", check=0).stdout)
    }
    assert rows == {"g1": "completed", "g2": "completed", "g3": "completed"}


def test_cancel_stops_a_goal_another_process_is_running(managed: ManagedFactory) -> None:
    repo = managed()
    runner, agent_pid = repo.start_hanging_run()
    started = time.monotonic()
    repo.harness("cancel", "g1", check=0)
    assert time.monotonic() - started < 30
    runner.communicate(timeout=30)
    wait_for(lambda: not alive(agent_pid), seconds=5)
    assert repo.status()["status"] == "cancelled"
    repo.harness("run", check=0)
    assert repo.count("build") == ["1"] and repo.status()["status"] == "cancelled"


def test_python_m_harness_and_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.startswith("harness, version ")
