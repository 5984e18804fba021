"""Issue 17, staleness pages a human: the stale notification, told once per stale spell,
against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from harness.commands.status import STALE_EXIT
from tests.e2e.test_notify import Hook
from tests.managed import ManagedFactory, ManagedRepo, base_goal


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook(200)
    yield server
    server.server.shutdown()


def _hung_run(repo: ManagedRepo) -> tuple[subprocess.Popen[str], int]:
    """A run whose build hangs (a fresh marker each time: the last one is gone)."""
    for old in repo.counters.glob("hanging-*"):
        old.unlink()
    return repo.start_hanging_run()


def _stop(proc: subprocess.Popen[str], agent: int) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    os.kill(agent, signal.SIGKILL)
    proc.communicate(timeout=60)


def _stale(hook: Hook) -> list[dict[str, object]]:
    return [d for d in hook.received if d["status"] == "stale"]


def test_a_stale_goal_is_told_once_and_again_after_it_advanced(
    managed: ManagedFactory, hook: Hook
) -> None:
    config = {"notify": {"webhook": "$HOOK_URL"}}
    # 3s: long enough that a goal just taken over is not stale yet on a loaded machine.
    goal = base_goal() | {"halt": {"no_progress_passes": 2, "stale_after": "3s"}}
    repo = managed(goal=goal, files={".harness/config.yaml": json.dumps(config)})
    repo.env["HOOK_URL"] = hook.url
    # A build that hangs far longer than stale_after: the runner holding the goal is stuck.
    proc, agent = _hung_run(repo)
    try:
        time.sleep(3.3)
        assert repo.harness("run").returncode == 4  # busy: the stuck runner holds it
        (told,) = _stale(hook)
        assert (told["goal"], told["previous"], told["stale_after_s"]) == ("g1", "running", 3)
        assert str(told["text"]).startswith("goal-harness: g1 is stale: nothing advanced it since ")
        assert str(told["text"]).endswith(f"longer than halt.stale_after 3s ({repo.root.name})")
        first = told["advanced_at"]
        assert first == repo.status()["advanced_at"]
        # The same stale spell: neither a second run nor what monitors call tells it again.
        assert repo.harness("run").returncode == 4
        assert repo.harness("status", "--check").returncode == STALE_EXIT
        assert len(_stale(hook)) == 1
    finally:
        _stop(proc, agent)
    # Another runner takes the cut-off build over (the goal advances) and hangs as well.
    proc, agent = _hung_run(repo)
    try:
        assert repo.status()["stale"] is False
        assert repo.harness("run").returncode == 4
        assert len(_stale(hook)) == 1  # advanced a moment ago: not stale, nothing told
        time.sleep(3.3)
        # This time `status --check` is the first to see it.
        assert repo.harness("status", "--check").returncode == STALE_EXIT
        assert [d["advanced_at"] != first for d in _stale(hook)] == [False, True]
        assert repo.harness("run").returncode == 4
        assert len(_stale(hook)) == 2
    finally:
        _stop(proc, agent)
    assert all(d["status"] == "stale" for d in hook.received)  # nothing else happened


def test_plain_status_tells_nothing(managed: ManagedFactory, hook: Hook) -> None:
    goal = base_goal() | {"halt": {"no_progress_passes": 2, "stale_after": "1s"}}
    config = {"notify": {"webhook": "$HOOK_URL"}}
    repo = managed(goal=goal, files={".harness/config.yaml": json.dumps(config)})
    repo.env["HOOK_URL"] = hook.url
    proc, agent = _hung_run(repo)
    try:
        time.sleep(1.3)
        assert repo.status()["stale"] is True
        repo.harness("status", check=0)
        assert hook.received == []  # only `--check` (what monitors call) and `run` tell
    finally:
        _stop(proc, agent)
