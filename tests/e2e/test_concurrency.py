"""One machine, many processes: locks, --jobs, cancel of a running goal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.managed import ManagedFactory, ManagedRepo, alive, base_goal, git, wait_for


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


def _sh_goal(goal_id: str, build: str) -> dict[str, object]:
    return base_goal(goal_id) | {
        "build": {"run": ["sh", "-c", build], "timeout": "60s"},
        "judge": {"run": ["true"], "timeout": "60s"},
    }


def _add_goals(repo: ManagedRepo, goals: list[dict[str, object]]) -> None:
    for goal in goals:
        text = yaml.safe_dump(goal, sort_keys=False)
        (repo.root / "goals" / f"{goal['id']}.yaml").write_text(text)
        repo.harness("approve", str(goal["id"]), "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "more goals")


def test_jobs_reuses_its_workers_and_replaces_one_that_dies(managed: ManagedFactory) -> None:
    """`--jobs 2` over six goals starts two workers, not six; a goal that kills its worker
    costs only itself: a new worker advances the goals still to run (commands/jobs.py)."""
    # Each build records the process that runs it: the worker (steps run bare here).
    note = 'echo $PPID >> "$TEST_COUNTER_DIR/workers"'
    goals = [_sh_goal(f"w{n}", note) for n in range(1, 6)]
    repo = managed(goal=_sh_goal("g1", note))
    _add_goals(repo, goals)
    env = {**repo.env, "HARNESS_SANDBOX": "off"}
    repo.harness("run", "--jobs", "2", env=env, check=0)
    rows = {r["id"]: r["status"] for r in json.loads(repo.harness("status", "--json").stdout)}
    assert set(rows.values()) == {"completed"}, rows
    assert len(set((repo.counters / "workers").read_text().split())) == 2
    # A build that kills the process running it: that goal stops, the others complete.
    (repo.counters / "workers").unlink()
    killer = _sh_goal("k0", f"{note}; kill -KILL $PPID")
    _add_goals(repo, [killer, *(_sh_goal(f"v{n}", note) for n in range(1, 5))])
    proc = repo.harness("run", "--jobs", "2", "k0", "v1", "v2", "v3", "v4", env=env, check=None)
    rows = {r["id"]: r["status"] for r in json.loads(repo.harness("status", "--json").stdout)}
    assert all(rows[f"v{n}"] == "completed" for n in range(1, 5)), (rows, proc.stderr)
    assert rows["k0"] != "completed"
    workers = set((repo.counters / "workers").read_text().split())
    assert len(workers) == 3
    # Said, in one line naming the goal, the worker and the signal; the run exits 1, not
    # the silent 247 a negative status made (issue 30, item 12).
    [said] = [line for line in proc.stderr.splitlines() if "worker" in line]
    killed = re.fullmatch(
        r"harness: k0: error: the `run --jobs` worker advancing it \(pid ([0-9]+)\) was killed "
        r"by SIGKILL; the goal is as the kill left it and the next run resumes it",
        said,
    )
    assert killed is not None and killed[1] in workers, said
    assert proc.returncode == 1, proc.stderr


def test_worktrees_are_added_and_pruned_one_process_at_a_time(managed: ManagedFactory) -> None:
    """A `git worktree prune` beside another process's `git worktree add` removes the new
    worktree's folder before git marks it (`could not open .../locked`): each prune and
    add waits for the machine's worktree lock (store/lock.py:worktree_admin)."""
    from harness.store.lock import worktree_admin

    repo = managed()
    with worktree_admin(repo.root / ".git"):
        proc = repo.spawn("run")
        time.sleep(3)
        assert proc.poll() is None
        assert not (repo.root / ".harness" / "worktrees" / "g1").exists()
    proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert repo.status()["status"] == "completed"


def _two_workers_busy(managed: ManagedFactory) -> tuple[subprocess.Popen[str], Path]:
    """`run --jobs 2` over four goals whose builds wait 20 s, once both workers' builds have
    started; the file where each build wrote its worker's pid."""
    note = 'echo $PPID >> "$TEST_COUNTER_DIR/workers"; sleep 20'
    repo = managed(goal=_sh_goal("g1", note))
    _add_goals(repo, [_sh_goal(f"w{n}", note) for n in range(1, 4)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--jobs", "2"],
        cwd=repo.root,
        env={**repo.env, "HARNESS_SANDBOX": "off"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    workers = repo.counters / "workers"
    wait_for(lambda: workers.is_file() and len(workers.read_text().split()) == 2, seconds=60)
    return proc, workers


def test_interrupted_jobs_start_no_new_worker(managed: ManagedFactory) -> None:
    """^C on `run --jobs 2` (the whole process group, as a terminal sends it) stops the two
    goals being advanced; the goals not yet started stay unstarted."""
    proc, workers = _two_workers_busy(managed)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=15)
    assert proc.returncode == 130
    time.sleep(1)
    assert len(workers.read_text().split()) == 2


def test_a_worker_stopped_before_its_run_hears_the_signal_starts_no_new_one(
    managed: ManagedFactory,
) -> None:
    """The race behind the test above: ^C reaches the workers and the run at once, and a
    worker's end can wake its thread before the run's main thread handles the signal. Here
    only the workers are signalled, so that order is certain: a worker stopped by SIGINT
    (exit 130) stops the run's slots too, and the goals not yet started stay unstarted."""
    proc, workers = _two_workers_busy(managed)
    for pid in {int(line) for line in workers.read_text().split()}:
        os.kill(pid, signal.SIGINT)
    try:
        proc.communicate(timeout=15)
    finally:
        proc.kill()
    time.sleep(1)
    assert len(workers.read_text().split()) == 2
    assert proc.returncode == 130
