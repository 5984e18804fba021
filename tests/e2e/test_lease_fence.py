"""Fencing: a runner stopped past its lease, while another runner took its step over,
discards its step's result when it wakes; nothing of it is appended, printed or committed,
and the shared record verifies with one finish per step (issue 14, remote.md "Fencing")."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
from pathlib import Path

from harness.commands.run import run
from tests.e2e.test_remote import clone
from tests.inprocess import FakeClock
from tests.managed import ManagedFactory, ManagedRepo, git


def _stopped_in_build(
    managed: ManagedFactory, tmp_path: Path
) -> tuple[ManagedRepo, Path, ManagedRepo, ManagedRepo, subprocess.Popen[str], int]:
    """Two clones of one bare remote; the first runner has started build[1] (its
    step.started, the lease, is pushed) and is stopped (SIGSTOP) as a suspended laptop or a
    paused VM would be; its hanging build is released for later builds. Returns the seed,
    the remote, both clones, the stopped run and its build's pid."""
    seed = managed()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    first, second = clone(seed, bare, tmp_path / "first"), clone(seed, bare, tmp_path / "second")
    runner, agent = first.start_hanging_run("--push", "origin")
    os.kill(runner.pid, signal.SIGSTOP)
    first.release_build()
    return seed, bare, first, second, runner, agent


def test_a_runner_woken_past_its_lease_discards_the_step_another_took(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    seed, bare, first, second, runner, agent = _stopped_in_build(managed, tmp_path)
    try:
        # The second runner's clock (2030) is past the first's lease: it takes the step
        # over, runs it again and finishes the goal, pushing every step.
        out, err = io.StringIO(), io.StringIO()
        code = run(second.root, [], None, "origin", second.env, out, err, FakeClock())
        assert code == 0, err.getvalue()
        assert "build[1] was cut off" in out.getvalue(), out.getvalue()
        taken = git(bare, "rev-parse", "harness/g1")
    finally:
        os.kill(agent, signal.SIGKILL)  # the first runner's build ends when it wakes
        os.kill(runner.pid, signal.SIGCONT)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 4, (stdout, stderr)
    # Nothing of the woken runner's step is printed or committed; its branch is the remote's.
    assert [line for line in stdout.splitlines() if " build[1] " in line] == [
        line for line in stdout.splitlines() if "build[1] started" in line
    ]
    assert git(first.root, "rev-parse", "harness/g1") == taken
    made = git(first.root, "reflog", "--format=%gs", "harness/g1").splitlines()
    assert not [m for m in made if m.startswith("commit") and "build 1 finished" in m], made
    assert git(first.worktree, "status", "--porcelain") == ""
    assert stderr.splitlines() == [
        f"harness: g1: busy: goal g1: build[1] ended after another runner took it over (its "
        f"lease ran until {_lease(first.root)}; the remote's branch is at {taken[:12]}); its "
        "result is discarded and nothing of it was recorded"
    ]
    # The shared record: one finish per step, and it verifies from a fresh clone.
    auditor = clone(seed, bare, tmp_path / "auditor")
    git(auditor.root, "fetch", "-q", "origin", "harness/g1:harness/g1")
    assert auditor.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
    events = json.loads(auditor.harness("replay", "g1", "--format", "json", check=0).stdout)
    finished = [
        (e["step"], e["iteration"]) for e in events["events"] if e["type"] == "step.finished"
    ]
    assert len(finished) == len(set(finished)) and ("build", 1) in finished, finished
    # The next run in the woken clone finds the goal finished and does nothing.
    assert first.harness("run", "--push", "origin", check=0).stdout == ""


def _lease(root: Path) -> str:
    """The lease the first runner's build[1] took, from its own (reset) branch's ledger."""
    text = git(root, "show", "harness/g1:ledger/g1/events/000001.jsonl")
    starts = [json.loads(line) for line in text.splitlines() if '"step.started"' in line]
    return str(starts[0]["e"]["data"]["lease_until"])


def test_a_woken_runner_fences_the_goal_branch_not_what_its_worktree_is_on(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """The hanging step checked another branch out in the goal's worktree before its runner
    was stopped. On waking, the fence asks the remote about the goal's branch (which moved:
    another runner took the step) and refuses to reset a worktree on another branch: exit
    3, and neither branch moves."""
    _, _, first, second, runner, agent = _stopped_in_build(managed, tmp_path)
    try:
        git(first.worktree, "checkout", "-q", "-b", "elsewhere")
        before = {ref: git(first.root, "rev-parse", ref) for ref in ("elsewhere", "harness/g1")}
        code = run(
            second.root, [], None, "origin", second.env, io.StringIO(), io.StringIO(), FakeClock()
        )
        assert code == 0
    finally:
        os.kill(agent, signal.SIGKILL)
        os.kill(runner.pid, signal.SIGCONT)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 3, (stdout, stderr)
    assert "the worktree is on 'elsewhere', not 'harness/g1'" in stderr, stderr
    assert {ref: git(first.root, "rev-parse", ref) for ref in before} == before
