"""Budgets from what real agents printed: counted once per build, across resumes and kills.

The fake agents print the REAL bytes the pinned CLIs wrote (tests/data/agents/README.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.loop.agents.captures import DATA
from tests.managed import ManagedFactory, base_goal

# Iteration N prints capture N of the plan; the last iteration also fixes value.txt.
REPLAY = r"""
import json, os, sys
from pathlib import Path
sys.stdin.read()
it = int(os.environ["HARNESS_ITERATION"])
counters = Path(os.environ["TEST_COUNTER_DIR"])
plan = json.loads((counters / "plan.json").read_text())
budget = {k: v for k, v in os.environ.items() if k.startswith("HARNESS_BUDGET_")}
(counters / f"budget-{it}.json").write_text(json.dumps(budget, sort_keys=True))
Path("value.txt").write_text("right\n" if it >= len(plan) else "wrong\n")
sys.stdout.write(Path(plan[it - 1]).read_text())
"""


def _run(
    managed: ManagedFactory,
    fmt: str,
    plan: list[str],
    config: str | None = None,
    made: dict[str, str] | None = None,
) -> dict[str, float]:
    """The budget used by a goal whose builds print, in turn, the captures `plan` names:
    files in tests/data/agents, or a test's own outputs (`made`, name -> text), written in
    the counters folder, which contained builds see (tests/managed.py, `counters_bound`)."""
    goal = base_goal() | {
        "build": {"run": [sys.executable, "replay.py"], "format": fmt},
        "halt": {"no_progress_passes": 5, "max_passes": 50},  # every failed build leaves "wrong"
    }
    files = {"replay.py": REPLAY}
    if config:
        files[".harness/config.yaml"] = config
    repo = managed(goal=goal, files=files)
    made = made or {}
    for name, text in made.items():
        (repo.counters / name).write_text(text)
    paths = [repo.counters / name if name in made else DATA / name for name in plan]
    (repo.counters / "plan.json").write_text(json.dumps([str(path) for path in paths]))
    run = repo.harness("run", check=0)
    print(run.stdout, run.stderr)  # shown by pytest when the figures are off: which steps ran
    used: dict[str, float] = repo.status()["budget_used"]
    return used


@pytest.mark.parametrize(
    ("plan", "cost", "turns"),
    [
        # two separate claude processes: each total is that process's
        (["claude/text-1.out", "claude/edit-allowed.out"], 0.0456, 5),
        # -p, then --resume of the same session: 0.005 then a session total of 0.01
        (["claude/resume-1.out", "claude/resume-2.out"], 0.01, 2),
        (["claude/resume-1.out", "claude/resume-2.out", "claude/resume-3-stream.out"], 0.015, 3),
    ],
)
def test_claude_budget_equals_what_claude_printed(
    managed: ManagedFactory, plan: list[str], cost: float, turns: int
) -> None:
    used = _run(managed, "claude-json", plan)
    assert used["cost_usd"] == pytest.approx(cost)
    assert used["turns"] == turns


def test_claude_totals_without_evidence_count_more(managed: ManagedFactory) -> None:
    # No usage/modelUsage to tell a session total from a process's own: each is taken whole.
    outputs = {}
    for index, total in enumerate((0.30, 0.75)):
        result = {
            "type": "result",
            "subtype": "success",
            "total_cost_usd": total,
            "num_turns": 3,
            "session_id": "s1",
        }
        outputs[f"bare-{index}.out"] = json.dumps(result)
    used = _run(managed, "claude-json", list(outputs), made=outputs)
    assert used["cost_usd"] == pytest.approx(1.05)
    assert used["turns"] == 6


PRICES = "version: 1\nprices:\n  input_usd_per_million: 1.0\n  cached_input_usd_per_million: 0.5\n  output_usd_per_million: 4.0\n"


def test_codex_resumed_thread_is_counted_once_per_build(managed: ManagedFactory) -> None:
    # thread totals 1000/50, 2000/100, 3000/150: each build used 1000 in, 50 out ($0.0012)
    used = _run(
        managed,
        "codex-jsonl",
        ["codex/resume-1.out", "codex/resume-2.out", "codex/resume-3.out"],
        PRICES,
    )
    assert used["cost_usd"] == pytest.approx(0.0036)
    assert used["turns"] == 3


def test_aider_printed_cost_is_the_budget(managed: ManagedFactory) -> None:
    used = _run(managed, "aider", ["aider/edit-nostream.out", "aider/badedit.out"])
    assert used["cost_usd"] == pytest.approx(0.0039)
    assert used["turns"] == 3


def test_every_build_is_told_the_budget_left(managed: ManagedFactory) -> None:
    goal = base_goal() | {
        "build": {"run": [sys.executable, "replay.py"], "format": "aider"},
        "budget": {
            "max_iterations": 3,
            "max_cost_usd": 0.004,
            "max_turns": 10,
            "max_seconds": "1h",
        },
    }
    repo = managed(goal=goal, files={"replay.py": REPLAY})
    plan = [str(DATA / "aider/badedit.out"), str(DATA / "aider/edit-nostream.out")]
    (repo.counters / "plan.json").write_text(json.dumps(plan))
    repo.harness("run", check=0)
    first = json.loads((repo.counters / "budget-1.json").read_text())
    second = json.loads((repo.counters / "budget-2.json").read_text())
    assert first == {
        "HARNESS_BUDGET_COST_USD": "0.004",
        "HARNESS_BUDGET_ITERATIONS": "2",
        "HARNESS_BUDGET_SECONDS": "3600",
        "HARNESS_BUDGET_TURNS": "10",
    }
    # after the first build: $0.0009 and 2 turns spent, one more iteration started
    assert second["HARNESS_BUDGET_COST_USD"] == "0.0031"
    assert second["HARNESS_BUDGET_ITERATIONS"] == "1"
    assert second["HARNESS_BUDGET_TURNS"] == "8"
    assert 3590 <= int(second["HARNESS_BUDGET_SECONDS"]) <= 3600


# Iteration 1 is claude killed after two paid calls: its transcript (real lines, stamped
# now) is where claude keeps them, in HOME/.claude/projects/<cwd, non-alphanumerics as ->.
KILLED_FIRST = r"""
import os, re, sys, time
from datetime import datetime, timezone
from pathlib import Path
sys.stdin.read()
it = int(os.environ["HARNESS_ITERATION"])
captures = Path(os.environ["TEST_CAPTURES"])
if it == 1:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    lines = (captures / "claude/kill-transcript.jsonl").read_text()
    folder = Path(os.environ["HOME"], ".claude", "projects", re.sub(r"[^A-Za-z0-9]", "-", os.getcwd()))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "s.jsonl").write_text(re.sub(r'"timestamp":"[^"]*"', f'"timestamp":"{now}"', lines))
    time.sleep(60)
Path("value.txt").write_text("right\n")
sys.stdout.write((captures / "claude/text-1.out").read_text())
"""


def test_claude_killed_by_its_timeout_counts_what_it_recorded(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    goal = base_goal() | {
        "build": {"run": [sys.executable, "killed.py"], "format": "claude-json", "timeout": "3s"}
    }
    repo = managed(goal=goal, files={"killed.py": KILLED_FIRST})
    repo.env |= {"HOME": str(tmp_path / "home"), "TEST_CAPTURES": str(DATA)}
    repo.harness("run", check=0)
    used = repo.status()["budget_used"]
    # the killed build's cost-state ($0.0204, 2 calls) plus the next build's $0.005, 1 turn
    assert used["cost_usd"] == pytest.approx(0.0254)
    assert used["turns"] == 3


def test_codex_output_over_a_mebibyte_is_still_counted_once(managed: ManagedFactory) -> None:
    # The resumed build's real lines with a real command_execution item repeated past 1 MiB
    # between thread.started and turn.completed: a tail would lose the thread id.
    first, *rest = (DATA / "codex/resume-2.out").read_text().splitlines(keepends=True)
    item = (DATA / "codex/edit-ww.out").read_text().splitlines(keepends=True)[4]
    padded = first + item * (1_200_000 // len(item)) + "".join(rest)
    assert len(padded.encode()) > 1_200_000
    made = {"resume-2-padded.out": padded}
    used = _run(managed, "codex-jsonl", ["codex/resume-1.out", *made], PRICES, made)
    assert used["cost_usd"] == pytest.approx(0.0024)
    assert used["turns"] == 2
