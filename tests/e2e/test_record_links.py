"""No links in the harness's own files (issue 13, done-when 5): a link planted in `ledger/`
never receives a byte, and the goal stops at `tamper` (or the run refuses, exit 3)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal

SEGMENT = "ledger/g1/events/000001.jsonl"

# A judge (a read-only step, whose comparison leaves ledger/ out) that swaps the goal's
# segment for a link to a file outside the repository holding the same lines.
LINKING_JUDGE = f"""
import os, pathlib, subprocess, sys
segment = pathlib.Path({SEGMENT!r})
outside = pathlib.Path(os.environ["TEST_COUNTER_DIR"], "outside.txt")
outside.write_bytes(segment.read_bytes())
os.chmod(outside, 0o444)
segment.unlink()
segment.symlink_to(outside)
sys.exit(subprocess.call([sys.executable, "judge.py"]))
"""


def _outside(repo: ManagedRepo) -> Path:
    return repo.counters / "outside.txt"


def _linked_by_the_judge(managed: ManagedFactory) -> ManagedRepo:
    """A goal whose judge plants the link, run: the segment it copied is `_outside`."""
    goal = base_goal() | {"judge": {"run": [sys.executable, "linking_judge.py"]}}
    repo = managed(goal=goal, mode="fix-on-1", files={"linking_judge.py": LINKING_JUDGE})
    repo.harness("run", check=0)
    return repo


def _no_byte_went_through(repo: ManagedRepo, status: str) -> None:
    written = _outside(repo).read_bytes()
    segment = repo.worktree / SEGMENT
    assert not segment.is_symlink() and segment.is_file()
    assert len(segment.read_bytes()) > len(written)  # events were appended after the judge
    assert segment.read_bytes().startswith(written)  # …and not one line went to the link
    out = repo.harness("verify", "g1", check=0).stdout
    assert out.startswith("ok g1: ") and f"status {status}" in out


@pytest.mark.bare("contained, the judge plants its link in a throw-away copy: no tamper to see")
def test_a_link_a_judge_plants_in_the_ledger_never_receives_a_byte(
    managed: ManagedFactory,
) -> None:
    repo = _linked_by_the_judge(managed)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper")
    _no_byte_went_through(repo, "needs_attention")


def test_a_link_a_contained_judge_plants_stays_in_its_copy(
    managed: ManagedFactory, contained: None
) -> None:
    repo = _linked_by_the_judge(managed)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("completed", None)  # its verdict stands
    assert repo.count("judge") == ["1"]
    _no_byte_went_through(repo, "completed")


def test_a_link_planted_between_runs_is_refused(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-2")
    repo.harness("run", "--max-steps", "1", check=0)
    segment = repo.worktree / SEGMENT
    outside = _outside(repo)
    outside.write_bytes(segment.read_bytes())
    segment.unlink()
    segment.symlink_to(outside)
    before = outside.read_bytes()
    proc = repo.harness("run", check=3)
    assert f"{segment}: is a link; the harness's own files are never links" in proc.stderr
    assert outside.read_bytes() == before and segment.is_symlink()
    assert repo.count("judge") == []


def test_the_goal_folder_as_a_link_is_refused(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(mode="fix-on-2")
    repo.harness("run", "--max-steps", "1", check=0)
    folder = repo.worktree / "ledger" / "g1"
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    os.symlink(elsewhere, folder)
    before = {p.name: p.read_bytes() for p in (elsewhere / "events").iterdir()}
    proc = repo.harness("run", check=3)
    assert f"{folder}: is a link" in proc.stderr
    assert {p.name: p.read_bytes() for p in (elsewhere / "events").iterdir()} == before
