"""Agents that report running totals: the cumulative budget is never double-counted or lost."""

from __future__ import annotations

import sys

import pytest

from tests.managed import base_goal

FAKE_CLAUDE = r"""
import json, os, sys
from pathlib import Path
sys.stdin.read()
it = int(os.environ["HARNESS_ITERATION"])
plan = json.loads(Path(os.environ["TEST_COUNTER_DIR"], "claude-plan.json").read_text())
cost, session = plan[it - 1]
Path("value.txt").write_text("right\n" if it >= len(plan) else "wrong\n")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "total_cost_usd": cost, "num_turns": 3 * it, "result": "ok",
                  "session_id": session}))
"""


@pytest.mark.parametrize(
    ("plan", "expected_cost", "expected_turns"),
    [
        ([[0.30, "s1"], [0.45, "s2"]], 0.75, 9),  # per-process totals: add up
        ([[0.30, "s1"], [0.75, "s1"]], 0.75, 6),  # the same session resumed: its total grows
    ],
)
def test_claude_json_totals_become_increases(managed, plan, expected_cost, expected_turns):
    goal = base_goal() | {
        "build": {"run": [sys.executable, "fake_claude.py"], "format": "claude-json"}
    }
    repo = managed(goal=goal, files={"fake_claude.py": FAKE_CLAUDE})
    import json

    (repo.counters / "claude-plan.json").write_text(json.dumps(plan))
    repo.harness("run", check=0)
    used = repo.status()["budget_used"]
    assert used["cost_usd"] == pytest.approx(expected_cost)
    assert used["turns"] == expected_turns
