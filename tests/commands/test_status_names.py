"""`harness status <id>` names only goals that exist: a typo is an error naming what
exists, not a fake pending goal with exit 0 (issue 30, item 13)."""

from __future__ import annotations

from tests.managed import ManagedFactory


def test_status_of_a_goal_that_does_not_exist_names_the_goals_that_do(
    managed: ManagedFactory,
) -> None:
    repo = managed()
    proc = repo.harness("status", "g2", check=2)
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "harness: goal g2: no goals/g2.yaml on refs/heads/main and no goal branch harness/g2 "
        "(expected one of: g1)"
    ]
    assert repo.harness("status", "g1", check=0).stdout.startswith("g1 pending ")
    # Without the secret too (a reviewer's clone): the same refusal.
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    assert repo.harness("status", "g2", "--json", env=env, check=2).stdout == ""
