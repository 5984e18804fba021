"""`harness verify` reads every commit, tree and blob the goal branch vouches for: a power
cut that empties or loses one of them, not only the head commit, fails naming it (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, git


def _object_file(repo: ManagedRepo, oid: str) -> Path:
    path = repo.root / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), f"{oid} is not a loose object"
    path.chmod(0o644)
    return path


def _target(repo: ManagedRepo, which: str) -> tuple[str, str]:
    """The object to damage, and the path verify names it by."""
    wt = repo.worktree
    if which == "segment blob":  # the committed ledger at the head
        path = "ledger/g1/events/" + git(wt, "ls-tree", "--name-only", "HEAD:ledger/g1/events/")
        return git(wt, "rev-parse", f"HEAD:{path}"), path
    if which == "work blob":  # the agent's file, as the goal branch committed it
        return git(wt, "rev-parse", "HEAD:value.txt"), "value.txt"
    if which == "ledger tree":
        return git(wt, "rev-parse", "HEAD:ledger/g1"), "ledger/g1"
    # An older commit's root tree: not the head, which loading the goal already reads.
    return git(wt, "rev-parse", "HEAD~2^{tree}"), "."


@pytest.mark.parametrize("which", ["segment blob", "work blob", "ledger tree", "older tree"])
@pytest.mark.parametrize("damage", ["cut", "empty", "missing"])
def test_a_damaged_object_the_branch_needs_fails_verify_naming_it(
    managed: ManagedFactory, which: str, damage: str
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
    oid, path = _target(repo, which)
    obj = _object_file(repo, oid)
    if damage == "cut":
        obj.write_bytes(obj.read_bytes()[: max(2, obj.stat().st_size // 2)])
    elif damage == "empty":
        obj.write_bytes(b"")
    else:
        obj.unlink()
    proc = repo.harness("verify", "g1", check=3)
    [line] = proc.stdout.splitlines()
    assert line.startswith("FAIL g1: ") and oid in line, line
    if which in ("work blob", "older tree") or (which, damage) == ("segment blob", "cut"):
        # Found by reading the objects; the head's own trees and the sizes of its ledger
        # blobs are read first, by loading the goal, which names the object too.
        assert line.startswith(f"FAIL g1: harness/g1: git object {oid} "), line
        where = "a commit or tree" if which == "older tree" else f"at {path}"
        assert f"{oid} ({where}) cannot be read: " in line, line
    assert "do not remove it" in line and "worktree remove" not in line
    assert proc.stderr == ""
