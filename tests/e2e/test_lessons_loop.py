"""Lessons in the loop: matched into the prompt, recorded, and checked at the done gate."""

from __future__ import annotations

import json

from tests.managed import ManagedFactory, base_goal, git

LESSON = """version: 1
when:
  keywords: [value]
text: |
  Also write NOTES.txt explaining the value.
check:
  run: [test, -f, NOTES.txt]
"""
AGENT_NOTES = r"""
import os
from pathlib import Path
it = int(os.environ["HARNESS_ITERATION"])
Path("value.txt").write_text("right\n")
if it >= 2 and "NOTES.txt" in open(os.environ["HARNESS_PROMPT_FILE"]).read():
    Path("NOTES.txt").write_text("value is right\n")
"""


def test_lesson_is_given_recorded_and_its_check_gates_done(managed: ManagedFactory) -> None:
    import sys

    goal = base_goal() | {"build": {"run": [sys.executable, "notes_agent.py"]}}
    repo = managed(goal=goal, files={"lessons/notes.yaml": LESSON, "notes_agent.py": AGENT_NOTES})
    out = repo.harness("run", check=0).stdout
    assert "build[1] started (lessons: notes)" in out
    assert "lesson notes check failed" in out
    assert "done gate blocked: lesson check failed: notes" in out
    assert "lesson notes check passed" in out
    assert repo.status()["status"] == "completed"
    events = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)["events"]
    given = [
        e["data"]["lessons"] for e in events if e["type"] == "step.started" and e["step"] == "build"
    ]
    assert given[0][0]["name"] == "notes" and len(given[0][0]["sha256"]) == 64


def test_a_bad_lesson_file_is_exit_2_before_any_step(managed: ManagedFactory) -> None:
    repo = managed(files={"lessons/bad.yaml": "version: 1\ntext: no when\n"})
    proc = repo.harness("run", check=2)
    assert "lessons/bad.yaml" in proc.stderr
    assert repo.count("build") == []
    git(repo.root, "rm", "-q", "lessons/bad.yaml")
    git(repo.root, "commit", "-qm", "drop the bad lesson")
    repo.harness("run", check=0)
