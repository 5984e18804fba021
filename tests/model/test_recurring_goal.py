"""`every` and `lifetime` in a goal file (issue 17, docs/specs/goal-file.md)."""

from __future__ import annotations

import pytest

from tests.model.test_goal import SOURCE, goal_bytes, message_of, parse


def test_a_goal_without_every_is_one_shot() -> None:
    goal = parse(goal_bytes())
    assert (goal.every_s, dict(goal.lifetime)) == (None, {})
    assert goal.halt.stale_after_s == 24 * 3600


def test_every_and_lifetime_parse_under_the_cells_names() -> None:
    lifetime = {"max_cost_usd": 4, "max_seconds": "2h", "max_turns": 900, "max_runs": 30}
    goal = parse(goal_bytes({"every": "24h", "lifetime": lifetime}))
    assert goal.every_s == 24 * 3600
    assert dict(goal.lifetime) == {"cost_usd": 4.0, "seconds": 7200, "turns": 900, "runs": 30}
    assert goal.halt.stale_after_s == 2 * 24 * 3600  # two intervals: two runs did not come


def test_a_recurring_goals_own_stale_after_wins() -> None:
    goal = parse(goal_bytes({"every": "1h", "halt": {"stale_after": "30m"}}))
    assert goal.halt.stale_after_s == 1800


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"lifetime": {"max_runs": 3}},
            "lifetime: lifetime caps are set but the goal does not recur",
        ),
        ({"every": "soon"}, "every: 'soon' is not a duration"),
        ({"every": 0}, "every: 0 is not greater than 0"),
        ({"every": "1h", "lifetime": {"max_runs": 0}}, "lifetime.max_runs:"),
        ({"every": "1h", "lifetime": {"max_cost_usd": -1}}, "lifetime.max_cost_usd:"),
        ({"every": "1h", "lifetime": {"max_seconds": "x"}}, "lifetime.max_seconds:"),
        ({"every": "1h", "lifetime": {"runs": 2}}, "lifetime: unknown key 'runs'"),
    ],
)
def test_bad_recurrence_names_file_key_and_expectation(
    changes: dict[str, object], expected: str
) -> None:
    message = message_of(goal_bytes(changes))
    assert message.startswith(f"{SOURCE}: {expected}"), message
    assert "(expected" in message
