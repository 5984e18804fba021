"""A revision is the owner's signature on a goal file, not on what a build did: it gives the
new version a fresh try but never crosses a gate about a step's own deed (a destructive
change, a tamper, a secret, a read-only step's write) or a ship gate. Those need the signed
decision bound to the exact commit (trust.md, "Which decision crosses which gate")."""

from __future__ import annotations

import sys
from typing import Any

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"']}
DROP = (
    "from pathlib import Path\n"
    "Path('migrations').mkdir(exist_ok=True)\n"
    "Path('migrations/0002_drop_users.sql').write_text('DROP TABLE users;\\n')\n"
    "Path('value.txt').write_text('right\\n')\n"
)


def _revise(repo: ManagedRepo, goal: dict[str, Any]) -> None:
    """The owner edits the objective, re-approves and commits: a new goal version."""
    repo.commit_goal_change(goal | {"objective": "Make value.txt say right, please.\n"})
    repo.harness("approve", repo.goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "commit", "-qam", "reword the objective, re-approve")


def test_a_revision_at_the_ship_gate_does_not_ship(managed: ManagedFactory) -> None:
    goal = base_goal() | {"ship": SHIP}
    repo = managed(goal=goal)
    repo.harness("run", check=0)
    assert (repo.status()["status"], repo.status()["gate"]) == ("parked_at_eyes", "ship")
    _revise(repo, goal)
    repo.harness("run", check=0)
    assert repo.count("ship") == []
    row = repo.status()
    assert (row["status"], row["gate"]) == ("parked_at_eyes", "ship")
    repo.verified()


def test_a_revision_does_not_clear_a_destructive_gate(managed: ManagedFactory) -> None:
    goal = base_goal() | {"build": {"run": [sys.executable, "drop_agent.py"]}}
    repo = managed(goal=goal, files={"drop_agent.py": DROP})
    repo.harness("run", check=0)
    row = repo.status()
    assert row["status"] == "parked_at_eyes" and str(row["gate"]).startswith("destructive")
    gate = row["gate"]
    _revise(repo, goal)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("parked_at_eyes", gate)
    repo.verified()
    # The decisions bound to the commit still cross it (one per class the build was found
    # doing: schema_change, then data_deletion), and the goal goes on.
    crossed = []
    while repo.status()["status"] == "parked_at_eyes":
        crossed.append(repo.status()["gate"])
        repo.harness("unpark", repo.goal_id, "--key", str(repo.key.private), check=0)
        git(repo.root, "commit", "-qam", "unpark")
        repo.harness("run", check=0)
    assert crossed == [gate, "destructive:data_deletion"]
    assert repo.status()["status"] == "completed"
    repo.verified()


def test_a_revision_does_not_clear_a_tamper_gate(managed: ManagedFactory) -> None:
    repo = managed(mode="tamper-owners")
    repo.harness("run", check=0)
    assert (repo.status()["status"], repo.status()["gate"]) == ("needs_attention", "tamper")
    _revise(repo, base_goal())
    repo.harness("run", check=0)
    assert (repo.status()["status"], repo.status()["gate"]) == ("needs_attention", "tamper")
    assert repo.count("build") == ["1"]
    repo.verified()
