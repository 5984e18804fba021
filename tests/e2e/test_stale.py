"""Issue 17, staleness: a goal nothing has advanced for longer than halt.stale_after."""

from __future__ import annotations

import os
import signal
import time

from harness.commands.status import ATTENTION_EXIT, PARKED_EXIT, STALE_EXIT, _check_code
from tests.managed import ManagedFactory, base_goal


def test_a_goal_whose_runner_died_goes_stale_and_check_exits_12(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=base_goal() | {"halt": {"no_progress_passes": 2, "stale_after": "1s"}})
    proc, agent = repo.start_hanging_run()
    # The runner dies mid-build (a machine lost, a cron line deleted): nothing moves it.
    os.kill(proc.pid, signal.SIGKILL)
    os.kill(agent, signal.SIGKILL)
    proc.communicate(timeout=60)
    time.sleep(2.2)
    row = repo.status()
    assert (row["status"], row["stale"], row["stale_after_s"]) == ("paused", True, 1)
    assert row["advanced_at"] is not None
    line = repo.harness("status", check=0).stdout
    assert " stale (nothing advanced it since " in line and "halt.stale_after 1s" in line
    assert repo.harness("status", "--check").returncode == STALE_EXIT
    # A run moves it again: finished goals are never stale, whatever their age.
    repo.release_build()
    repo.harness("run", check=0)
    time.sleep(1.2)
    row = repo.status()
    assert (row["status"], row["stale"]) == ("completed", False)
    assert repo.harness("status", "--check").returncode == 0


def test_a_goal_waiting_for_a_human_is_never_stale(managed: ManagedFactory) -> None:
    goal = base_goal() | {"budget": {"max_iterations": 1}}
    repo = managed(
        mode="never", goal=goal | {"halt": {"no_progress_passes": 2, "stale_after": "1s"}}
    )
    repo.harness("run", check=0)
    time.sleep(1.2)
    row = repo.status()
    assert (row["gate"], row["stale"]) == ("budget_exhausted", False)


def test_a_default_stale_after_is_recorded_for_a_goal_that_names_none(
    managed: ManagedFactory,
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["stale_after_s"], row["stale"]) == (24 * 3600, False)


def test_stale_comes_after_parked_and_attention() -> None:
    stale = {"status": "paused", "stale": True}
    assert _check_code([stale]) == STALE_EXIT
    assert _check_code([stale, {"status": "needs_attention"}]) == ATTENTION_EXIT
    assert _check_code([stale, {"status": "parked_at_eyes"}]) == PARKED_EXIT
