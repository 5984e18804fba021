"""Issue 30, item 7: a recurring goal's every run is news. A nightly that fails every night
is told every night, once a night, with why, which run, and what to run next; a restart in
the middle of a run tells that run once.

Nights are simulated as in test_schedule.py: each tick is a real `harness run` whose clock
starts at the tick's time (`HARNESS_NOW`); the webhook is a real server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from tests.e2e.test_notify import Hook
from tests.managed import ManagedFactory, ManagedRepo, base_goal

DAY = timedelta(days=1)
FIRST_NIGHT = datetime.fromisoformat("2030-01-01T02:00:00+00:00")
FAILING = "tests/test_value.py::test_value_is_right"


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook(200)
    yield server
    server.server.shutdown()


def failing_nightly(managed: ManagedFactory, hook: Hook) -> ManagedRepo:
    """`every: 24h`, one build a run, a judge that never passes: each run fails."""
    goal = base_goal() | {"every": "24h", "budget": {"max_iterations": 1}}
    config = {"notify": {"webhook": "$HOOK_URL"}}
    repo = managed(goal=goal, mode="never", files={".harness/config.yaml": json.dumps(config)})
    repo.env["HOOK_URL"] = hook.url
    return repo


def at(when: datetime) -> dict[str, str]:
    return {"HARNESS_NOW": when.isoformat().replace("+00:00", "Z")}


def tick(repo: ManagedRepo, when: datetime) -> None:
    repo.harness("run", check=0, env=repo.env | at(when))


def test_a_nightly_that_fails_every_night_is_told_every_night_once(
    managed: ManagedFactory, hook: Hook
) -> None:
    repo = failing_nightly(managed, hook)
    for night in range(10):
        two = FIRST_NIGHT + night * DAY
        tick(repo, two - timedelta(hours=1))  # the hourly cron before: nothing due
        tick(repo, two + timedelta(seconds=2))
        tick(repo, two + timedelta(hours=1))  # and after: this night's run has ended
        assert len(hook.received) == night + 1, night  # told this night's run, and once
        assert [d["run"] for d in hook.received] == list(range(1, night + 2))
    assert len(repo.count("build")) == 10
    for run, told in enumerate(hook.received, start=1):
        assert (told["status"], told["gate"], told["reason"]) == (
            "failed",
            None,
            "budget_exhausted",
        )
        assert told["gate_detail"] == "iterations 1/1"
        assert told["failing_test"] == FAILING
        assert told["next"] == f"harness replay g1 --run {run}"
        assert told["text"] == (
            f"goal-harness: g1 is failed in run {run} ({repo.root.name}): budget_exhausted: "
            f"iterations 1/1; failing test {FAILING}; next: harness replay g1 --run {run}"
        )
    repo.verified()


def test_a_run_killed_mid_build_and_resumed_is_told_once(
    managed: ManagedFactory, hook: Hook
) -> None:
    repo = failing_nightly(managed, hook)
    tick(repo, FIRST_NIGHT + timedelta(seconds=1))
    assert len(hook.received) == 1
    second = FIRST_NIGHT + DAY + timedelta(seconds=1)
    repo.env |= at(second)  # the hanging run below ticks on night 2 too
    proc, agent = repo.start_hanging_run()
    os.kill(proc.pid, signal.SIGKILL)
    os.kill(agent, signal.SIGKILL)
    proc.communicate(timeout=60)
    repo.release_build()
    assert repo.status()["run"] == 2 and len(hook.received) == 1  # killed before it ended
    tick(repo, second + timedelta(minutes=5))  # resumes run 2: it ends and is told
    tick(repo, second + timedelta(minutes=10))  # a restart after it ended: nothing new
    assert len(hook.received) == 2
    tick(repo, FIRST_NIGHT + 2 * DAY + timedelta(seconds=1))
    assert [(d["run"], d["status"]) for d in hook.received] == [(n, "failed") for n in (1, 2, 3)]
