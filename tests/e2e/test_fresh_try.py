"""A revised goal gets a fresh try (issue 30, item 5): the new version's judge looks at the
tree before any build, the no-progress count starts again, the budget is kept; and
`unpark --extend-budget` crosses every gate that more budget lets the goal go past."""

from __future__ import annotations

import sys
from typing import Any

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

# A judge that is wrong: it wants a word the objective never asked for, so the agent's
# right answer fails it every time (same failing test, same tree: no progress).
WRONG_JUDGE = {
    "run": [
        sys.executable,
        "-c",
        "import sys; from pathlib import Path\n"
        "if Path('value.txt').read_text().strip() == 'rigth': sys.exit(0)\n"
        "print('FAILED tests/test_value.py::test_value_is_rigth'); sys.exit(1)\n",
    ],
    "timeout": "60s",
}

# An agent that needs three rounds: wrong twice (the same tree), then right.
SLOW_AGENT = r"""
import os
from pathlib import Path
iteration = int(os.environ["HARNESS_ITERATION"])
Path(os.environ["TEST_COUNTER_DIR"], "build.log").open("a").write(f"{iteration}\n")
Path("value.txt").write_text("right\n" if iteration >= 3 else "wrong\n")
"""


def _wrong_goal(**more: Any) -> dict[str, Any]:
    return base_goal() | {"judge": WRONG_JUDGE, "budget": {"max_iterations": 2}} | more


def _approval_count(repo: ManagedRepo) -> int:
    return (repo.root / "goals" / "g1.approval").read_text().count("BEGIN SSH SIGNATURE")


def _fix_judge_and_reapprove(repo: ManagedRepo, goal: dict[str, Any]) -> None:
    """The owner's one act: the goal file with the right judge, approved and committed."""
    repo.commit_goal_change(goal | {"judge": base_goal()["judge"]})
    repo.harness("approve", repo.goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "commit", "-qam", "fix the judge, re-approve")


def _stuck(repo: ManagedRepo) -> None:
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "no_progress")
    assert repo.count("build") == ["1", "2"]


def _after_revision(repo: ManagedRepo) -> list[tuple[str, str | None]]:
    events = repo.replayed()["events"]
    (at,) = [i for i, e in enumerate(events) if e["type"] == "goal.revised"]
    return [(e["type"], e.get("step")) for e in events[at + 1 :]]


def test_fixed_judge_and_reapproval_completes_with_one_signature(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=_wrong_goal(), mode="fix-on-1")
    _stuck(repo)
    _fix_judge_and_reapprove(repo, _wrong_goal())
    out = repo.harness("run", check=0).stdout
    assert " revised sha256=" in out
    row = repo.status()
    assert (row["status"], row["gate"]) == ("completed", None)
    assert repo.count("build") == ["1", "2"]  # the work was done; only the judge was wrong
    assert repo.count("judge") == ["3"]  # the new judge, once, on the tree as it was
    assert _after_revision(repo)[:2] == [("step.started", "judge"), ("step.finished", "judge")]
    assert row["budget_used"]["iterations"] == 2  # kept across the revision, not reset
    assert _approval_count(repo) == 2  # the first approval and the re-approval: no unpark
    repo.verified()


def test_revision_keeps_the_budget_and_extend_budget_crosses_its_gate(
    managed: ManagedFactory,
) -> None:
    goal = _wrong_goal(build={"run": [sys.executable, "slow_agent.py"], "timeout": "60s"})
    repo = managed(goal=goal, files={"slow_agent.py": SLOW_AGENT})
    _stuck(repo)
    _fix_judge_and_reapprove(repo, goal)
    repo.harness("run", check=0)
    row = repo.status()
    # The new judge still fails (the work is not done); its repair is round 3, which the
    # kept budget of 2 does not allow: a budget gate, not no_progress again.
    assert (row["status"], row["gate"]) == ("needs_attention", "budget_exhausted")
    assert row["budget_used"]["iterations"] == 2
    assert repo.count("judge") == ["3"] and repo.count("build") == ["1", "2"]
    key = str(repo.key.private)
    repo.harness("unpark", "g1", "--key", key, "--extend-budget", "iterations=3", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("completed", None)
    assert repo.count("build") == ["1", "2", "3"] and repo.count("judge") == ["3", "3"]
    assert _approval_count(repo) == 3
    repo.verified()


def test_extend_budget_crosses_a_no_progress_gate(managed: ManagedFactory) -> None:
    repo = managed(mode="nothing", goal=base_goal() | {"budget": {"max_iterations": 2}})
    _stuck(repo)
    key = str(repo.key.private)
    # The budget is spent too: the report names the one decision that lets the goal go on,
    # and a plain unpark (it would stop at budget_exhausted at once) is refused.
    report = (repo.ledger_dir / "report.md").read_text()
    assert "harness unpark g1 --key <owner key> --extend-budget iterations=N" in report
    plain = repo.harness("unpark", "g1", "--key", key, check=2)
    assert "expected --extend-budget iterations=4" in plain.stderr
    assert _approval_count(repo) == 1
    repo.harness("unpark", "g1", "--key", key, "--extend-budget", "iterations=3", check=0)
    row = repo.status()
    assert repo.count("build") == ["1", "2", "3"]  # the goal moved on past both gates
    assert (row["gate"], row["budget_limit"]["iterations"]) == ("budget_exhausted", 3)
    assert _approval_count(repo) == 2
    repo.verified()
