"""With `--push`, a clone whose goal branch is behind a remote where another clone brought
the goal to rest (or runs its step under a live lease) catches up without loading the goal
(remote.md, item 3): its branch and worktree move to the remote's commit, and the answer is
the one the full path would give. A remote cell that does not verify is never taken."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, git


def _team(managed: ManagedFactory, tmp_path: Path) -> tuple[ManagedRepo, ManagedRepo, Path]:
    seed = managed(mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    clones = []
    for name in ("first", "second"):
        subprocess.run(["git", "clone", "-q", str(bare), str(tmp_path / name)], check=True)
        clones.append(ManagedRepo(tmp_path / name, seed.key, seed.counters, "g1", seed.env))
    return clones[0], clones[1], bare


def _git_calls(repo: ManagedRepo, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` logs each call's arguments to the returned file."""
    wrapper, log = tmp_path / "bin", tmp_path / "git.log"
    wrapper.mkdir(exist_ok=True)
    real = shutil.which("git")
    (wrapper / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (wrapper / "git").chmod(0o755)
    return {**repo.env, "PATH": f"{wrapper}:{repo.env['PATH']}"}, log


def _loaded(log: Path) -> list[str]:
    """The calls only the full path makes: a worktree made, or the record's tree listed."""
    return [c for c in log.read_text().splitlines() if "worktree" in c or "ls-tree" in c]


def test_a_goal_finished_elsewhere_is_caught_up_without_a_worktree(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    first, second, bare = _team(managed, tmp_path)
    first.harness("run", "--push", "origin", check=0)
    env, log = _git_calls(second, tmp_path)
    proc = second.harness("run", "--push", "origin", env=env, check=0)
    assert (proc.stdout, proc.stderr) == ("", "harness: nothing to run: g1 completed\n")
    assert _loaded(log) == []
    assert not second.worktree.exists()  # the full path would have made one to load it
    assert git(second.root, "rev-parse", "harness/g1") == git(bare, "rev-parse", "harness/g1")
    assert second.status()["status"] == "completed"
    # The next run finds the branch in step and answers from its committed cell.
    log.unlink()
    second.harness("run", "--push", "origin", env=env, check=0)
    assert _loaded(log) == [] and not second.worktree.exists()
    assert first.count("build") == ["1"]


def test_a_worktree_behind_is_reset_to_the_remote_without_loading(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    first, second, bare = _team(managed, tmp_path)
    second.harness("run", "--push", "origin", "--max-steps", "1", check=0)  # build[1] here
    first.harness("run", "--push", "origin", check=0)  # the judge there: completed
    behind = git(second.root, "rev-parse", "harness/g1")
    env, log = _git_calls(second, tmp_path)
    second.harness("run", "--push", "origin", env=env, check=0)
    assert _loaded(log) == []
    assert any(" reset -q --hard " in f" {c}" for c in log.read_text().splitlines())
    remote = git(bare, "rev-parse", "harness/g1")
    assert remote != behind
    assert git(second.worktree, "rev-parse", "HEAD") == remote
    assert git(second.worktree, "status", "--porcelain") == ""
    assert second.status()["status"] == "completed"
    assert second.verified().startswith("ok g1: ")
    assert first.count("build") == ["1"] and first.count("judge") == ["1"]


def test_a_forged_remote_cell_is_not_taken_as_resting(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """A committer (no secret) pushes a fast-forward commit whose cell says completed: its
    MAC fails, so the catch-up does not answer from it; the full path refuses the goal."""
    first, second, _ = _team(managed, tmp_path)
    first.harness("run", "--push", "origin", "--max-steps", "1", check=0)
    cell_path = first.ledger_dir / "state.json"
    cell = json.loads(cell_path.read_text())
    assert cell["status"] == "running"
    cell["status"] = "completed"
    cell_path.write_text(json.dumps(cell, indent=2) + "\n")
    git(first.worktree, "commit", "-qam", "the goal is done")
    git(first.worktree, "push", "-q", "origin", "harness/g1")
    proc = second.harness("run", "--push", "origin")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "state.json" in proc.stderr
    assert first.count("build") == ["1"]


def test_a_goal_worktree_on_another_branch_is_refused_before_anything_moves(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """A step (or a process it left) checked out another branch in the goal's worktree: a
    reset there to catch up would move that branch instead. The run refuses (exit 3) and
    neither branch moves."""
    first, second, bare = _team(managed, tmp_path)
    second.harness("run", "--push", "origin", "--max-steps", "1", check=0)  # build[1] here
    first.harness("run", "--push", "origin", check=0)  # the judge there: completed
    git(second.worktree, "checkout", "-q", "-b", "elsewhere")
    before = {ref: git(second.root, "rev-parse", ref) for ref in ("elsewhere", "harness/g1")}
    proc = second.harness("run", "--push", "origin")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "the worktree is on 'elsewhere', not 'harness/g1'" in proc.stderr
    assert {ref: git(second.root, "rev-parse", ref) for ref in before} == before
    assert git(bare, "rev-parse", "harness/g1") != before["harness/g1"]
