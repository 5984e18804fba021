"""The crash matrix: killed at every failpoint, then resumed, a goal ends exactly as an
uninterrupted run does, verifies, and never runs a finished step again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal

FAILPOINTS = [
    "after_append",
    "after_cell_write",
    "before_commit",
    "after_commit",
    "in_plan",
    "in_build",
    "in_judge",
    "in_review",
]
GOAL = base_goal() | {
    "plan": {"run": ["sh", "-c", "echo plan: write right"]},
    "review": {"run": ["sh", "-c", "grep -q right value.txt"]},
}

# What a finished goal looks like: status, gate, iteration, each step.finished as
# (step, iteration, result), the worktree's files, and every event.
Outcome = tuple[
    str, str | None, int, list[tuple[str, int, str | None]], dict[str, bytes], list[dict[str, Any]]
]


def outcome(repo: ManagedRepo) -> Outcome:
    events = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)["events"]
    finished = [
        (e["step"], e["iteration"], e["data"].get("result"))
        for e in events
        if e["type"] == "step.finished"
    ]
    row = repo.status()
    tree = {
        p.name: p.read_bytes() for p in repo.worktree.iterdir() if p.is_file() and p.name != ".git"
    }
    return row["status"], row["gate"], row["iteration"], finished, tree, events


def assert_no_finished_step_ran_again(events: list[dict[str, Any]]) -> None:
    finished_at: dict[str, int] = {}
    for e in events:
        cid = e["data"].get("call_id")
        if e["type"] == "step.finished":
            assert cid not in finished_at, f"{cid} finished twice"
            finished_at[cid] = e["seq"]
        if e["type"] == "step.started":
            assert cid not in finished_at, f"{cid} started again after it finished"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    from tests.managed import ManagedRepo, make_key

    base = tmp_path_factory.mktemp("baseline")
    repo = ManagedRepo.create(base / "repo", make_key(base, "k"), goal=GOAL)
    repo.harness("run", check=0)
    return outcome(repo)


@pytest.mark.parametrize("nth", [1, 2, 4])
@pytest.mark.parametrize("point", FAILPOINTS)
def test_killed_at_failpoint_then_resumed(
    managed: ManagedFactory, baseline: Outcome, point: str, nth: int
) -> None:
    repo = managed(goal=GOAL)
    first = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": f"{point}@{nth}"})
    assert first.returncode in (0, -9), first.stderr
    for _ in range(5):
        if repo.status()["status"] not in ("pending", "running", "paused"):
            break
        repo.harness("verify", check=0)
        repo.harness("run", check=0)
    status, gate, iteration, finished, tree, events = outcome(repo)
    assert (status, gate, iteration, finished, tree) == baseline[:5]
    assert_no_finished_step_ran_again(events)
    repo.harness("verify", check=0)
