"""Which commits bound each build's change (record/changes.py), read from the ledger."""

from __future__ import annotations

from pathlib import Path

from harness.record.changes import goal_changes
from tests.record.test_report import GOAL, Story


def _started(story: Story, step: str, iteration: int, base: str) -> None:
    story.emit("step.started", step, iteration, {"call_id": "c" * 16, "base": base})


def _finished(story: Story, step: str, iteration: int, **extra: object) -> None:
    data = {"call_id": "c" * 16, "exit_code": 0, "timed_out": False, "duration_s": 1.0}
    story.emit("step.finished", step, iteration, data | {"output_tail": "", **extra})


def test_a_build_tried_again_spans_every_try_and_the_last_ends_at_the_head(
    tmp_path: Path,
) -> None:
    story = Story(tmp_path / "events")
    story.approved()  # control_commit d…d: the base
    _started(story, "build", 1, "1" * 40)
    _finished(story, "build", 1, result="unavailable", unavailable_tries=3)
    _started(story, "build", 1, "2" * 40)  # the same iteration, tried again
    _finished(story, "build", 1, tree="t")
    _started(story, "judge", 1, "3" * 40)  # names the commit holding build 1's change
    _finished(story, "judge", 1, result="fail", tree="t")
    _started(story, "build", 2, "4" * 40)
    _finished(story, "build", 2, tree="u")
    changes = goal_changes(story.records(), GOAL)
    assert changes.base == "d" * 40
    assert changes.builds == {1: ("1" * 40, "3" * 40), 2: ("4" * 40, None)}
    assert changes.target("h" * 40) == "h" * 40  # not waiting: the branch head
    story.gate(2, "parked_at_eyes", "ship", "passed")
    assert goal_changes(story.records(), GOAL).target("h" * 40) == "f" * 40  # the gate commit
