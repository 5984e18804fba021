"""Many machines through one remote: each step runs once in total, one verifiable history."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.managed import ManagedFactory, ManagedRepo, git


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
