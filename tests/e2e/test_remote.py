"""Many machines through one remote: each step runs once in total, one verifiable history."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git


def clone(seed: ManagedRepo, bare: Path, path: Path) -> ManagedRepo:
    subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
    return ManagedRepo(path, seed.key, seed.counters, seed.goal_id, dict(seed.env))


def remote_cell_status(bare: Path) -> str | None:
    import json

    text = subprocess.run(
        ["git", "--git-dir", str(bare), "show", "harness/g1:ledger/g1/state.json"],
        capture_output=True,
        text=True,
    )
    return json.loads(text.stdout)["status"] if text.returncode == 0 else None


def test_three_clones_share_one_remote(managed: ManagedFactory, tmp_path: Path) -> None:
    seed = managed()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    clones = [clone(seed, bare, tmp_path / f"clone{i}") for i in range(3)]
    for _ in range(6):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "harness", "run", "--push", "origin", "--max-steps", "2"],
                cwd=c.root,
                env=c.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for c in clones
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode in (0, 4), err
        if remote_cell_status(bare) == "completed":
            break
    assert remote_cell_status(bare) == "completed"
    assert seed.count("build") == ["1", "2"]
    assert seed.count("judge") == ["1", "2"]
    fresh = clone(seed, bare, tmp_path / "auditor")
    git(fresh.root, "fetch", "-q", "origin", "harness/g1:harness/g1")
    out = fresh.harness("verify", "g1", check=0).stdout
    assert re.match(r"ok g1: \d+ events, head \d+:\w+, status completed", out), out


def test_push_to_an_unknown_remote_is_refused(managed: ManagedFactory) -> None:
    repo = managed()
    proc = repo.harness("run", "--push", "nowhere", check=2)
    assert "'nowhere' is not a remote" in proc.stderr


REFUSING_HOOK = """#!/bin/sh
if [ -e "{deny}" ]; then
  echo "quota exceeded for this repository; ask an admin" >&2
  exit 1
fi
"""


def test_a_push_the_remote_refuses_keeps_every_result(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """A pre-receive hook that refuses is not a lost race: no event or step result is
    dropped, the remote's own words are shown, and once it allows pushes again the next
    run pushes what was kept and no step runs twice."""
    # The first build makes the remote start refusing (once): the push of its result fails.
    # Its marks go in the counters folder, which contained builds see writable.
    marks = '"$TEST_COUNTER_DIR/deny" "$TEST_COUNTER_DIR/denied"'
    once = f'[ -e "$TEST_COUNTER_DIR/denied" ] || touch {marks}'
    build = ["sh", "-c", f'"{sys.executable}" agent.py && {{ {once}; }}']
    seed = managed(goal=base_goal() | {"build": {"run": build, "timeout": "60s"}})
    deny = seed.counters / "deny"
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(REFUSING_HOOK.format(deny=deny))
    hook.chmod(0o755)
    runner = clone(seed, bare, tmp_path / "runner")
    first = runner.harness("run", "--push", "origin", check=4)
    assert first.stderr.splitlines() == [
        "harness: g1: error: harness/g1: the push to 'origin' failed and the remote did not "
        "move: [remote rejected] (pre-receive hook declined): the remote says: quota exceeded "
        "for this repository; ask an admin; the results stay on the local branch and the next "
        "`harness run --push` pushes them"
    ]
    assert seed.count("build") == ["1"]
    replay = runner.harness("replay", "g1", "--format", "json", check=0).stdout
    events = json.loads(replay)["events"]
    assert [(e["type"], e["step"]) for e in events][-2:] == [
        ("step.started", "build"),
        ("step.finished", "build"),
    ]
    assert (runner.worktree / "value.txt").read_text() == "wrong\n"
    local = git(runner.root, "rev-parse", "harness/g1")
    assert git(runner.worktree, "status", "--porcelain") == ""
    # Still refusing: the next run stops before appending anything.
    before = runner.snapshot()
    runner.harness("run", "--push", "origin", check=4)
    assert runner.snapshot() == before
    assert git(runner.root, "rev-parse", "harness/g1") == local
    # Allowed again: the kept result is pushed first, and the goal goes on from it.
    deny.unlink()
    runner.harness("run", "--push", "origin", check=0)
    assert remote_cell_status(bare) == "completed"
    assert seed.count("build") == ["1", "2"] and seed.count("judge") == ["1", "2"]
    assert (
        git(runner.root, "rev-parse", "harness/g1")
        == subprocess.run(
            ["git", "--git-dir", str(bare), "rev-parse", "harness/g1"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    runner.harness("verify", "g1", check=0)


def test_a_remote_rolled_back_is_refused_in_every_clone(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    seed = managed()
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    first, second = (clone(seed, bare, tmp_path / name) for name in ("first", "second"))
    first.harness("run", "--push", "origin", check=0)
    second.harness("run", "--push", "origin", check=0)  # sees the finished goal
    assert remote_cell_status(bare) == "completed"
    builds = seed.count("build")
    head = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", "harness/g1", "harness/g1~2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    subprocess.run(["git", "--git-dir", str(bare), "update-ref", "refs/heads/harness/g1", head[1]])
    for runner in (first, second, first):  # and again: it is never taken as healed
        proc = runner.harness("run", "--push", "origin", check=3)
        assert proc.stderr.splitlines() == [
            f"harness: g1: refused: harness/g1: the remote's branch went back from "
            f"{head[0][:12]} to {head[1][:12]}, which no runner does (runners only "
            "fast-forward): a rollback or a rewrite of the goal's record; nothing was run; "
            "restore it with a fast-forward push from a clone that has the full history, or "
            "investigate"
        ]
    assert seed.count("build") == builds
    assert git(first.root, "rev-parse", "harness/g1") == head[0]
    remote_now = ["git", "--git-dir", str(bare), "rev-parse", "harness/g1"]
    assert subprocess.run(remote_now, capture_output=True, text=True).stdout.strip() == head[1]


def test_a_finished_goal_in_step_with_the_remote_is_not_loaded_again(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """With --push a goal whose local branch is where the remote's was fetched takes the
    resting shortcut: no sync, no load. Its git calls are counted through a wrapper."""
    seed = managed(mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    runner = clone(seed, bare, tmp_path / "runner")
    runner.harness("run", "--push", "origin", check=0)
    assert remote_cell_status(bare) == "completed"
    wrapper, log = tmp_path / "bin", tmp_path / "git.log"
    wrapper.mkdir()
    real = shutil.which("git")
    (wrapper / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    (wrapper / "git").chmod(0o755)
    env = {**runner.env, "PATH": f"{wrapper}:{runner.env['PATH']}"}
    proc = runner.harness("run", "--push", "origin", env=env, check=0)
    assert proc.stdout == ""
    calls = log.read_text().splitlines()
    assert not [c for c in calls if "ls-tree" in c or "reset" in c or "worktree" in c], calls
    # Behind the remote (another runner moved it), the goal takes the full path again.
    log.unlink()
    git(runner.root, "update-ref", "refs/heads/harness/g1", "harness/g1~1")
    runner.harness("run", "--push", "origin", env=env, check=0)
    assert git(runner.root, "rev-parse", "harness/g1") == git(bare, "rev-parse", "harness/g1")
    assert [c for c in log.read_text().splitlines() if "reset" in c]
    assert seed.count("build") == ["1"]
