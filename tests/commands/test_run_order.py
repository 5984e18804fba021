"""With `--push`, each runner goes over the goals in an order of its own (remote.md, item
2), so runners started together do not all race for the first goal, and two runners that
meet at a goal do not meet again at the next."""

from __future__ import annotations

import itertools
import os

from harness.commands.run import own_order, spread
from harness.store.gitrepo import Repo
from harness.store.remote import Remote, runner_id
from tests.managed import ManagedFactory

IDS = [f"g{n:02d}" for n in range(40)]
RUNNERS = [f"host:/srv/clone-{n // 2}/.git {1000 + n}" for n in range(8)]


def test_each_runner_sees_every_goal_once_in_its_own_order() -> None:
    orders = [own_order(IDS, runner) for runner in RUNNERS]
    for order in orders:
        assert sorted(order) == IDS  # every goal, once
    assert len({order[0] for order in orders}) >= 6  # eight runners, (nearly) eight starts
    # The same runner keeps its order; one goal or none has only one.
    assert own_order(IDS, RUNNERS[0]) == orders[0]
    assert own_order(["g1"], "any") == ["g1"] and own_order([], "any") == []


def test_two_runners_that_meet_at_a_goal_go_on_to_different_goals() -> None:
    """In lists rotated to each runner's start, every goal has the same next goal in every
    runner's order: a runner that found a goal taken found the next taken too."""
    orders = [own_order(IDS, runner) for runner in RUNNERS]
    nexts = [dict(itertools.pairwise(order)) for order in orders]
    for i, mine in enumerate(nexts):
        for theirs in nexts[i + 1 :]:
            shared = [goal for goal, after in mine.items() if theirs.get(goal) == after]
            assert len(shared) <= 4, shared  # by chance about one in 40


def test_with_push_the_run_takes_this_runners_order(managed: ManagedFactory) -> None:
    repo = Repo.discover(managed().root)
    assert spread(IDS, repo, None) == IDS  # no remote: the sorted order, as always
    mine = own_order(IDS, f"{runner_id(repo)} {os.getpid()}")
    assert spread(IDS, repo, Remote(repo, "origin")) == mine
