"""GoalRunner and Recorder in this process: a real repository, real step commands, a fixed
clock (tests/inprocess.py), and exact events, cells, gates and commits asserted."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable

import pytest

from harness.errors import Busy
from harness.loop.recorder import call_id
from tests.inprocess import InProcess
from tests.managed import ManagedRepo, base_goal, git

FAILING = "tests/test_value.py::test_value_is_right"
RunHere = Callable[..., InProcess]
FEEDBACK = f"FAILED {FAILING} - AssertionError: value is 'wrong'\n"


@pytest.fixture
def run_here(managed: Callable[..., ManagedRepo]) -> RunHere:
    """A factory: run_here(**managed_kwargs) -> an InProcess on a new managed repository."""
    return lambda **kwargs: InProcess(managed(**kwargs))


def _subjects(here: InProcess) -> list[str]:
    return git(here.repo.worktree, "log", "--format=%s", "-7").splitlines()


def test_build_then_passing_judge_completes(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1")
    cell = here.runner().advance()
    assert (cell.status, cell.step, cell.iteration, cell.gate) == ("completed", None, 1, None)
    assert (cell.used.iterations, cell.used.passes, cell.used.turns) == (1, 2, 2)
    assert cell.used.cost_usd == 0.25
    events = here.events()
    assert [(e.type, e.step, e.iteration) for e in events] == [
        ("goal.started", None, 0),
        ("step.started", "build", 1),
        ("step.finished", "build", 1),
        ("step.started", "judge", 1),
        ("step.finished", "judge", 1),
        ("goal.completed", None, 1),
    ]
    # One tick per clock reading: a step's lease is read just before its start is appended.
    assert [e.ts[11:19] for e in events] == [
        "00:00:00",
        "00:00:02",
        "00:00:03",
        "00:00:05",
        "00:00:06",
        "00:00:07",
    ]
    assert events[1].data["lease_until"] == "2030-01-01T00:06:01.000Z"  # 60s timeout + 300s
    assert events[2].data["changed"] == ["value.txt"]
    assert events[4].data["result"] == "pass" and events[4].data["failing_test"] is None
    assert events[5].data == {"commit": git(here.repo.worktree, "rev-parse", "HEAD~1")}
    assert _subjects(here)[:6] == [
        "harness(g1): completed",
        "harness(g1): judge 1 finished",
        "harness(g1): judge 1 started",
        "harness(g1): build 1 finished",
        "harness(g1): build 1 started",
        "harness(g1): goal started",
    ]
    sha = hashlib.sha256((here.repo.root / "goals" / "g1.yaml").read_bytes()).hexdigest()
    assert here.lines[0] == (
        f"2030-01-01T00:00:00.000Z g1 #1 started sha256={sha[:12]} approved-by=owner@example.com "
        "limits: iterations=3 seconds=7200 cost_usd=20.0 turns=300 passes=50\n"
    )
    assert here.lines[-1] == "2030-01-01T00:00:07.000Z g1 #6 completed\n"
    assert here.repo.count("build") == ["1"] and here.repo.count("judge") == ["1"]


def test_failing_judge_is_recalled_in_the_cell_and_the_repair_prompt(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-2")
    cell = here.runner(max_steps=2).advance()
    assert (cell.status, cell.step, cell.iteration) == ("running", "build", 2)
    assert (cell.failing_test, cell.feedback) == (FAILING, FEEDBACK)
    assert (cell.no_progress_count, cell.judge_passed) == (1, False)
    # A new runner reads the cell back from disk and repairs with what it recalls.
    cell = here.runner().advance()
    assert (cell.status, cell.iteration, cell.failing_test, cell.feedback) == (
        "completed",
        2,
        None,
        None,
    )
    assert "repair round" not in (here.repo.counters / "prompt-1.txt").read_text()
    assert (here.repo.counters / "prompt-2.txt").read_text() == (
        "Goal: g1\n"
        "Iteration: 2 of 3\n"
        "\n"
        "Objective:\n"
        "Make value.txt say right.\n"
        "\n"
        "This is a repair round: the previous attempt did not pass.\n"
        f"Failing: {FAILING}\n"
        "Output tail:\n"
        f"{FEEDBACK}"
    )
    assert here.repo.count("build") == ["1", "2"] and here.repo.count("judge") == ["1", "2"]


def test_budget_exhausted_gates_before_another_build(run_here: RunHere) -> None:
    here = run_here(mode="never", goal=base_goal() | {"budget": {"max_iterations": 1}})
    cell = here.runner().advance()
    assert (cell.status, cell.gate, cell.gate_detail) == (
        "needs_attention",
        "budget_exhausted",
        "iterations 1/1",
    )
    assert (cell.step, cell.iteration, cell.used.iterations) == ("build", 2, 1)
    assert cell.gate_commit == git(here.repo.worktree, "rev-parse", "HEAD~1")
    assert here.repo.count("build") == ["1"]
    assert _subjects(here)[0] == "harness(g1): needs_attention (budget_exhausted)"


def test_ship_gate_parks_without_running_ship(run_here: RunHere) -> None:
    goal = base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}}
    here = run_here(mode="fix-on-1", goal=goal)
    cell = here.runner().advance()
    passed = git(here.repo.worktree, "rev-parse", "HEAD~1")
    assert (cell.status, cell.gate, cell.step) == ("parked_at_eyes", "ship", None)
    assert cell.gate_detail == f"commit {passed} passed the done gate; ship needs a signed decision"
    assert cell.steps == ("build", "judge", "ship")
    assert not (here.repo.worktree / "SHIPPED").exists()
    assert here.types()[-1] == "goal.gated"


def test_read_only_step_that_changes_the_tree_is_a_violation(run_here: RunHere) -> None:
    judge = {"run": [sys.executable, "-c", "open('judged.txt', 'w').write('x')"]}
    here = run_here(mode="fix-on-1", goal=base_goal() | {"judge": judge})
    cell = here.runner().advance()
    assert (cell.status, cell.gate, cell.gate_detail) == (
        "needs_attention",
        "read_only_violation",
        "the judge step is read-only but changed: judged.txt (restored, not committed;"
        " git-ignore them or change the command, then `harness unpark` runs the judge step"
        " again)",
    )
    assert not (here.repo.worktree / "judged.txt").exists()
    assert (cell.step, cell.iteration, cell.failing_test) == ("judge", 1, None)
    finished = here.events()[-2]
    assert (finished.type, finished.step, finished.data["result"]) == (
        "step.finished",
        "judge",
        "violation",
    )
    assert finished.data["changed"] == ["judged.txt"]


def test_build_touching_a_protected_path_is_tamper_and_restored(run_here: RunHere) -> None:
    here = run_here(mode="tamper-owners")
    owners = (here.repo.root / ".harness" / "owners").read_bytes()
    cell = here.runner().advance()
    assert (cell.status, cell.gate, cell.gate_detail) == (
        "needs_attention",
        "tamper",
        "touched .harness/owners",
    )
    finished = here.events()[-2]
    assert (finished.type, finished.step, finished.data["result"]) == (
        "step.finished",
        "build",
        "tamper",
    )
    assert (here.repo.worktree / ".harness" / "owners").read_bytes() == owners
    assert git(here.repo.worktree, "show", "HEAD:.harness/owners").encode() + b"\n" == owners
    assert here.repo.count("judge") == []


def _cut_off_build(here: InProcess, runner_name: str = "") -> str:
    """Record build 1 as started, as a harness killed inside the build would leave it."""
    first = here.runner()
    cid = call_id("g1", 1, "build")
    data = {
        "call_id": cid,
        "base": first.wt.head(),
        "runner": runner_name,
        "lease_until": "2030-01-01T00:06:00.000Z",
    }
    first.recorder.emit("step.started", "build", 1, data)
    first.recorder.checkpoint("build 1 started")
    (here.repo.worktree / "partial.txt").write_text("work in progress\n")
    return cid


def test_cut_off_build_is_recorded_then_run_again_under_its_call_id(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1")
    cid = _cut_off_build(here)
    runner = here.runner()
    flight = runner.cell.in_flight
    assert flight is not None and (flight.step, flight.iteration, flight.call_id) == (
        "build",
        1,
        cid,
    )
    cell = runner.advance()
    assert cell.status == "completed"
    events = here.events()
    assert [(e.type, e.step) for e in events[2:5]] == [
        ("step.cutoff", "build"),
        ("step.started", "build"),
        ("step.finished", "build"),
    ]
    assert events[2].data == {"call_id": cid, "changed": ["partial.txt"]}
    assert events[3].data["call_id"] == cid and events[4].data["call_id"] == cid
    assert (
        "2030-01-01T00:00:02.000Z g1 #3 build[1] was cut off; work in progress: 1 files\n"
        in here.lines
    )
    assert cell.used.passes == 3  # the cut-off start counts: a step that always dies must stop
    assert here.repo.count("build") == ["1"]


def test_step_in_flight_on_another_runner_within_its_lease_is_busy(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1")
    _cut_off_build(here, runner_name="elsewhere:/repo/.git")
    with pytest.raises(Busy) as caught:
        here.runner(runner="here:/repo/.git").advance()
    assert str(caught.value) == (
        "goal g1: build[1] is being run by elsewhere:/repo/.git "
        "(lease until 2030-01-01T00:06:00.000Z)"
    )
    assert here.repo.count("build") == []


def test_call_ids_are_stable_and_reach_the_step(run_here: RunHere) -> None:
    expected = hashlib.sha256(b"g1\x001\x00build").hexdigest()[:16]
    assert call_id("g1", 1, "build") == expected == "24cd58e7644a6efc"
    others = {call_id("g1", 2, "build"), call_id("g1", 1, "judge"), call_id("g2", 1, "build")}
    assert expected not in others and len(others) == 3
    here = run_here(mode="env-dump")
    here.runner(max_steps=1).advance()
    started, finished = here.events()[1:3]
    assert started.data["call_id"] == finished.data["call_id"] == expected
    env = json.loads((here.repo.counters / "env.json").read_text())
    assert (env["HARNESS_CALL_ID"], env["HARNESS_STEP"], env["HARNESS_ITERATION"]) == (
        expected,
        "build",
        "1",
    )
    assert "HARNESS_SECRET" not in env
