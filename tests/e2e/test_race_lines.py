"""Two runners, one remote: the runner that loses the race prints nothing that did not
happen, and its status says what it knows."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, git

# On the remote: the first push to the goal branch finds that another runner got there
# first. The hook puts back the branch the other runner pushed (held aside while this
# runner fetched) and rejects the push, as a fast-forward-only remote would.
HOOK = """#!/bin/sh
saved=$(cat "$GIT_DIR/held-aside" 2>/dev/null) || exit 0
rm -f "$GIT_DIR/held-aside"
env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES \\
  git update-ref refs/heads/harness/g1 "$saved"
echo "another runner pushed first" >&2
exit 1
"""


def _clone(seed: ManagedRepo, bare: Path, path: Path) -> ManagedRepo:
    subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
    return ManagedRepo(path, seed.key, seed.counters, seed.goal_id, dict(seed.env))


def _lost_race(
    managed: ManagedFactory, tmp_path: Path
) -> tuple[ManagedRepo, subprocess.CompletedProcess[str]]:
    seed = managed(mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    winner = _clone(seed, bare, tmp_path / "winner")
    loser = _clone(seed, bare, tmp_path / "loser")
    winner.harness("run", "--push", "origin", check=0)
    won = git(bare, "rev-parse", "refs/heads/harness/g1")
    git(bare, "update-ref", "-d", "refs/heads/harness/g1")
    (bare / "held-aside").write_text(won + "\n")
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    proc = loser.harness("run", "--push", "origin", check=4)
    assert git(bare, "rev-parse", "refs/heads/harness/g1") == won
    return loser, proc


def test_the_loser_prints_no_start_it_did_not_make(managed: ManagedFactory, tmp_path: Path) -> None:
    loser, proc = _lost_race(managed, tmp_path)
    assert proc.stdout == ""  # no `g1 #1 started`: that event went with the lost race
    assert proc.stderr == (
        "harness: g1: busy: harness/g1: another runner advanced the goal first; "
        "leaving it to them\n"
    )
    status = loser.harness("status", check=0).stdout
    assert status.startswith("g1 completed step=- iteration=1 "), status


def test_a_step_another_clone_runs_is_not_shown_paused(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    seed = managed(mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    first = _clone(seed, bare, tmp_path / "first")
    second = _clone(seed, bare, tmp_path / "second")
    running, agent = first.start_hanging_run("--push", "origin")
    try:
        busy = second.harness("run", "--push", "origin", check=4)
        assert busy.stdout == ""  # no `resumed`: the other clone's lease holds the step
        assert "is being run by " in busy.stderr
        # Answered from the remote's cell (remote.md, item 3): the goal was not loaded, so
        # no worktree was made for it here.
        assert not second.worktree.exists()
        row = second.status()
        assert row["status"] == "running"
        assert row["elsewhere"]["step"] == "build[1]"
        assert row["elsewhere"]["runner"].endswith(str(first.root / ".git"))
        line = second.harness("status", check=0).stdout
        assert line.startswith("g1 running step=build iteration=1 ")
        assert " elsewhere: build[1] by " in line and "as last fetched: `git fetch`" in line
    finally:
        first.release_build()
        os.kill(agent, signal.SIGKILL)  # the hanging build; its run then ends on its own
        running.communicate(timeout=120)
