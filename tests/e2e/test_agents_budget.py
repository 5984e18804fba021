"""Agents that report running totals: the cumulative budget is never double-counted or lost."""

from __future__ import annotations

import sys

import pytest

from tests.managed import ManagedFactory, base_goal

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
def test_claude_json_totals_become_increases(
    managed: ManagedFactory,
    plan: list[list[float | str]],
    expected_cost: float,
    expected_turns: int,
) -> None:
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


FAKE_CODEX = r"""
import json, os, sys
from pathlib import Path
sys.stdin.read()
Path("value.txt").write_text("right\n")
for event in (
    {"type": "thread.started", "thread_id": "t-" + os.environ["HARNESS_ITERATION"]},
    {"type": "turn.completed", "usage": {"input_tokens": 2000000, "cached_input_tokens": 1000000,
                                          "output_tokens": 500000}},
):
    print(json.dumps(event))
"""


def test_codex_tokens_are_priced_from_the_config(managed: ManagedFactory) -> None:
    goal = base_goal() | {
        "build": {"run": [sys.executable, "fake_codex.py"], "format": "codex-jsonl"}
    }
    config = "version: 1\nprices:\n  input_usd_per_million: 1.0\n  cached_input_usd_per_million: 0.5\n  output_usd_per_million: 4.0\n"
    repo = managed(goal=goal, files={"fake_codex.py": FAKE_CODEX, ".harness/config.yaml": config})
    repo.harness("run", check=0)
    used = repo.status()["budget_used"]
    # 1M fresh input at $1 + 1M cached at $0.50 + 0.5M output at $4 = $3.50, one turn
    assert used["cost_usd"] == pytest.approx(3.5)
    assert used["turns"] == 1
