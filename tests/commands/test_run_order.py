"""With `--push`, each runner goes over the goals from its own place in the list (remote.md,
item 2), so runners started together do not all race for the first goal."""

from __future__ import annotations

import os

from harness.commands.run import rotation, spread
from harness.store.gitrepo import Repo
from harness.store.remote import Remote, runner_id
from tests.managed import ManagedFactory

IDS = [f"g{n:02d}" for n in range(40)]


def test_each_runner_sees_every_goal_once_from_its_own_start() -> None:
    orders = [rotation(IDS, f"host:/srv/clone-{n // 2}/.git {1000 + n}") for n in range(8)]
    for order in orders:
        start = IDS.index(order[0])
        assert order == IDS[start:] + IDS[:start]  # a rotation: every goal, once, in turn
    assert len({order[0] for order in orders}) >= 6  # eight runners, (nearly) eight starts
    # The same runner keeps its order; one goal or none has only one.
    assert rotation(IDS, "host:/srv/clone-0/.git 1000") == orders[0]
    assert rotation(["g1"], "any") == ["g1"] and rotation([], "any") == []


def test_with_push_the_run_takes_this_runners_rotation(managed: ManagedFactory) -> None:
    repo = Repo.discover(managed().root)
    assert spread(IDS, repo, None) == IDS  # no remote: the sorted order, as always
    mine = rotation(IDS, f"{runner_id(repo)} {os.getpid()}")
    assert spread(IDS, repo, Remote(repo, "origin")) == mine
