"""A ship step under the sandbox pushes the signed gate commit to a real bare remote.

Inside the sandbox `.git` is read-only and so is everything outside the step's copy of the
signed commit: a push only reads the repository's objects, but the remote it writes must
be shown writable, a `sandbox_binds` entry marked `rw:` (docs/specs/sandbox.md, "Ship")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import _events
from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal, git
from tests.tools import needs_bwrap


def _parked(tmp_path: Path, key: OwnerKey, push: list[str], bind_remote: str | None) -> ManagedRepo:
    """The goal parked at its ship gate; `bind_remote` is the remote's bind: "rw:",
    "" (read-only) or None (not bound)."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    remote = [] if bind_remote is None else [f"{bind_remote}{bare}"]
    binds = [f"rw:{tmp_path / 'counters'}", *remote]
    config = f"sandbox: required\nsandbox_binds: {json.dumps(binds)}\n"
    goal = base_goal() | {"ship": {"run": push, "timeout": "60s"}}
    repo = ManagedRepo.create(
        tmp_path / "repo", key, goal=goal, mode="fix-on-1", files={".harness/config.yaml": config}
    )
    git(repo.root, "remote", "add", "origin", str(bare))
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    return repo


def _gate_commit(repo: ManagedRepo) -> str:
    return str(json.loads((repo.ledger_dir / "state.json").read_text())["gate_commit"])


@needs_bwrap
@pytest.mark.parametrize("remote", ["path", "origin"])
def test_a_contained_ship_step_pushes_the_gate_commit(
    tmp_path: Path, owner_key: OwnerKey, remote: str
) -> None:
    target = str(tmp_path / "remote.git") if remote == "path" else "origin"
    push = ["git", "push", target, "HEAD:refs/heads/feature/g1"]
    repo = _parked(tmp_path, owner_key, push, bind_remote="rw:")
    gate = _gate_commit(repo)
    proc = repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert repo.status()["status"] == "completed", proc.stdout
    assert git(tmp_path / "remote.git", "rev-parse", "refs/heads/feature/g1") == gate
    ship = [e for e in _events(repo) if e["type"] == "step.started" and e["step"] == "ship"]
    assert [e["data"]["sandbox"] for e in ship] == ["bwrap"]  # type: ignore[index]


@needs_bwrap
@pytest.mark.parametrize("bind_remote", [None, ""], ids=["not-bound", "read-only"])
def test_a_remote_not_bound_writable_is_not_written(
    tmp_path: Path, owner_key: OwnerKey, bind_remote: str | None
) -> None:
    push = ["git", "push", str(tmp_path / "remote.git"), "HEAD:refs/heads/feature/g1"]
    repo = _parked(tmp_path, owner_key, push, bind_remote=bind_remote)
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=5)
    # the step failed: it waits for a fix and a new decision
    assert (repo.status()["status"], repo.status()["gate"]) == ("needs_attention", "ship_failed")
    [ship] = [e for e in _events(repo) if e["type"] == "step.finished" and e["step"] == "ship"]
    data = ship["data"]
    assert isinstance(data, dict)
    if bind_remote is None:  # hidden by the step's own /tmp: not a repository there
        assert data["exit_code"] == 128
    else:  # shown read-only: git cannot write its objects
        assert data["exit_code"] == 1
        assert "unable to create temporary object directory" in data["output_tail"]
    assert git(tmp_path / "remote.git", "for-each-ref") == ""


@needs_bwrap
def test_a_path_remote_the_sandbox_hides_is_named_in_the_gate(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    """Issue 30 item 8: `git push origin` to a bare repository under /tmp fails in the
    sandbox; the gate keeps git's first error line whole and names the fix."""
    repo = _parked(tmp_path, owner_key, ["git", "push", "origin", "HEAD:refs/heads/f"], None)
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=5)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "ship_failed")
    bare = tmp_path / "remote.git"
    detail = row["gate_detail"]
    assert detail.startswith("the ship step exited 128: fatal: ")
    assert f"'{bare}' does not appear to be a git repository" in detail
    assert (
        f"the sandbox hides remote origin's path {bare} from the ship step: add `rw:{bare}`"
        " to sandbox_binds in .harness/config.yaml (or push to a URL)"
    ) in detail
