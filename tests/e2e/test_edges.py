"""The edges of a run say what happened in one line: a killed agent, a remote that is not
there or hangs, a read-only disk (issue 14, done-when 6)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_remote import clone
from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

BARE_KILL = "the same kill bare: the signal is the wait status's, not read from bwrap's 128+N"


@pytest.mark.parametrize(
    "how", ["contained", pytest.param("bare", marks=pytest.mark.bare(BARE_KILL))]
)
def test_an_agent_killed_by_a_signal_is_named(
    managed: ManagedFactory, contained_steps: str, how: str
) -> None:
    goal = base_goal() | {"build": {"run": ["sh", "-c", "kill -KILL $$"], "timeout": "60s"}}
    repo = managed(goal=goal)
    out = repo.harness("run", "--max-steps", "1", check=0).stdout
    finished = [line for line in out.splitlines() if " build[1] " in line and "started" not in line]
    assert len(finished) == 1 and " killed by SIGKILL " in finished[0], out
    assert "exit=None" not in out
    replay = repo.harness("replay", "g1", "--format", "json", check=0).stdout
    events = json.loads(replay)["events"]
    data = next(e["data"] for e in events if e["type"] == "step.finished")
    assert (data["exit_code"], data["signal"], data["timed_out"]) == (None, "SIGKILL", False)
    started = next(e["data"] for e in events if e["type"] == "step.started")
    assert started["sandbox"] == ("off" if contained_steps == "off" else "bwrap"), how
    assert repo.harness("replay", "g1", check=0).stdout == out


def test_an_unreachable_remote_is_one_line_naming_it(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed()
    git(repo.root, "remote", "add", "origin", str(tmp_path / "gone.git"))
    proc = repo.harness("run", "--push", "origin", check=4)
    assert proc.stderr.splitlines() == [
        # The control branch is read first (remote.md, "Following the control branch").
        f"harness: --push origin: cannot read the control branch main from the remote: git "
        f"ls-remote -q --heads failed in {repo.root}: '{tmp_path / 'gone.git'}' does not appear "
        "to be a git repository; nothing was run"
    ]
    assert proc.stdout == "" and repo.count("build") == []


def test_a_hook_that_hangs_cannot_stall_a_run(managed: ManagedFactory, tmp_path: Path) -> None:
    seed = managed()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 60\n")
    hook.chmod(0o755)
    runner = clone(seed, bare, tmp_path / "runner")
    began = time.monotonic()
    proc = runner.harness(
        "run", "--push", "origin", env=runner.env | {"HARNESS_GIT_TIMEOUT": "2"}, check=4
    )
    assert time.monotonic() - began < 30
    [line] = proc.stderr.splitlines()
    assert line.startswith("harness: g1: error: harness/g1: the push to 'origin' failed and")
    assert "did not finish in 2s" in line, line
    assert seed.count("build") == []  # the lease (step.started) was never pushed: not run


def test_a_bad_git_timeout_is_refused_by_name(managed: ManagedFactory) -> None:
    repo = managed()
    proc = repo.harness("run", env=repo.env | {"HARNESS_GIT_TIMEOUT": "soon"}, check=2)
    assert proc.stderr.splitlines() == [
        "harness: HARNESS_GIT_TIMEOUT: 'soon' (expected seconds, a number > 0)"
    ]


def _goal_head(repo: ManagedRepo) -> tuple[str, Path]:
    sha = git(repo.worktree, "rev-parse", "HEAD")
    return sha, repo.root / ".git" / "objects" / sha[:2] / sha[2:]


@pytest.mark.parametrize("damage", ["empty", "missing"])
def test_a_lost_head_object_is_refused_naming_it(managed: ManagedFactory, damage: str) -> None:
    """After a power cut the goal branch's newest commit object is empty or gone: verify
    exits 3 naming it, run stops without appending and never advises removing the worktree."""
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    sha, obj = _goal_head(repo)
    parent = git(repo.worktree, "rev-parse", "HEAD^")  # the checkpoint before it
    obj.chmod(0o644)
    if damage == "empty":
        obj.write_bytes(b"")
    else:
        obj.unlink()
    verify = repo.harness("verify", "g1", check=3)
    assert sha in verify.stdout + verify.stderr
    before = repo.snapshot()
    run = repo.harness("run", check=3)
    [line] = run.stderr.splitlines()
    assert line.startswith(f"harness: g1: refused: {repo.worktree}: the head commit {sha} ")
    assert line.endswith(
        f"the checkpoint before it, {parent}, is intact: `git -C {repo.worktree} update-ref "
        f"HEAD {parent}` puts the branch back on it and the next `harness run` rolls the "
        "worktree's events forward onto it; the worktree and its uncommitted events are intact: "
        "do not remove it; an object a `git gc --prune=now` beside a run removed is written "
        "again from the worktree by `harness run` while its files still hold it; else fetch "
        "the goal branch from the remote or another clone, or run `git fsck` to see what was lost"
    ), line
    assert "worktree remove" not in line
    assert repo.snapshot() == before and repo.count("build") == ["1"]


def test_an_empty_goal_branch_ref_is_refused_with_safe_advice(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    last = git(repo.root, "rev-parse", "harness/g1")  # the worktree's HEAD log keeps it
    (repo.root / ".git" / "refs" / "heads" / "harness" / "g1").write_bytes(b"")
    before = repo.snapshot()
    run = repo.harness("run", check=3)
    assert run.stderr.splitlines() == [
        f"harness: g1: refused: {repo.worktree}: the goal branch 'harness/g1' is broken (its "
        "ref is empty or not a commit id, as a power cut can leave it) while its worktree is "
        "kept on it; the worktree and its uncommitted events are intact: do not remove it; put "
        "the branch back with `rm .git/refs/heads/harness/g1`, then `git update-ref "
        f"refs/heads/harness/g1 {last}`, or fetch it from a remote or another clone"
    ]
    assert repo.snapshot() == before and repo.count("build") == ["1"]
    assert repo.harness("verify", "g1").returncode == 3


def _mount_read_only(root: Path) -> bool:
    bind = subprocess.run(["mount", "--bind", str(root), str(root)], capture_output=True)
    if bind.returncode != 0:
        return False
    ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(root)], capture_output=True)
    if ro.returncode != 0:
        subprocess.run(["umount", str(root)], check=True)
        return False
    return True


def test_a_read_only_file_system_is_one_line_naming_the_file(managed: ManagedFactory) -> None:
    repo = managed(mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    if not _mount_read_only(repo.root):
        pytest.skip("needs permission to bind-mount read-only")
    try:
        before = repo.snapshot()
        for args in (("run",), ("cancel", "g1")):
            proc = repo.harness(*args, check=1)
            lock = repo.root / ".git" / "harness" / "locks" / "g1.lock"
            assert proc.stderr.splitlines() == [
                f"harness: cannot write '{lock}': Read-only file system"
            ]
        assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
        assert repo.snapshot() == before
    finally:
        subprocess.run(["umount", str(repo.root)], check=True)


def test_a_worktree_removed_mid_build_is_never_committed_as_deletions(
    managed: ManagedFactory,
) -> None:
    repo = managed()
    proc, agent = repo.start_hanging_run()
    shutil.rmtree(repo.worktree)
    repo.release_build()
    os.kill(agent, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert err.splitlines() == [
        f"harness: g1: refused: {repo.worktree}: the goal's worktree was removed while "
        "build[1] ran; nothing of that step was recorded; the next run recreates the worktree "
        "from the goal branch and runs the step again"
    ]
    assert not repo.worktree.exists()  # nothing appended, so no ledger folder made again
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "1", "2"]  # the cut-off build ran again once
    for commit in git(repo.root, "rev-list", "harness/g1").split():
        assert "agent.py" in git(repo.root, "ls-tree", "--name-only", commit).split(), commit
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
