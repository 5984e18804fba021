"""A goal driven through `harness run` with a real agent CLI against the scripted server."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.server import ModelServer
from tests.managed import JUDGE, ManagedRepo, git

# The judge prints a documentation URL the way pytest does, on the server itself: a tool
# that follows URLs in its prompt would fetch it, and the server would record it.
JUDGE_WITH_URL = JUDGE.replace(
    'print("FAILED', 'print("Docs: " + os.environ["TEST_DOCS_URL"])\nprint("FAILED'
)


@dataclass
class Scenario:
    repo: ManagedRepo
    server: ModelServer
    home: Path

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return self.repo.harness("run", *args, timeout=timeout)

    @property
    def worktree_file(self) -> Path:
        return self.repo.worktree / "value.txt"

    def events(self) -> list[dict[str, Any]]:
        lines = []
        for segment in sorted((self.repo.ledger_dir / "events").glob("*.jsonl")):
            lines += [json.loads(line)["e"] for line in segment.read_text().splitlines()]
        return lines

    def builds(self) -> list[dict[str, Any]]:
        """The data of every finished build, oldest first."""
        return [
            e["data"]
            for e in self.events()
            if e["type"] == "step.finished" and e["step"] == "build"
        ]

    def used(self) -> dict[str, Any]:
        return dict(self.repo.status()["budget_used"])

    def goal_change(self) -> list[str]:
        """Paths the goal branch changed against main, its own ledger left out."""
        names = git(self.repo.root, "diff", "--name-only", "main", f"harness/{self.repo.goal_id}")
        return [n for n in names.splitlines() if not n.startswith("ledger/")]

    def on_branch(self, path: str) -> str:
        return git(self.repo.root, "show", f"harness/{self.repo.goal_id}:{path}")
