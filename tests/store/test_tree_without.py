"""A work tree id read and hashed in-process (`Worktree.tree_without`) is the id git's own
`ls-tree | mktree` gives, for every kind of entry, and the tree exists afterwards."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.store.worktree import Worktree


def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, input=data)
    return proc.stdout.decode().strip()


def by_git(root: Path, tree: str, exclude: str) -> str:
    """The old way: `ls-tree -z`, the entry dropped, `mktree -z` (written)."""
    listing = subprocess.run(
        ["git", "ls-tree", "-z", tree], cwd=root, check=True, capture_output=True
    ).stdout
    kept = [e for e in listing.split(b"\0") if e and not e.endswith(b"\t" + exclude.encode())]
    return git(root, "mktree", "-z", data=b"".join(e + b"\0" for e in kept))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name in ("a.txt", "a-b", "a/inner.txt", "ledger/g/state.json", "ledgers", "z z", "é.md"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("a.txt")
    git(root, "add", "-A")
    blob = git(root, "hash-object", "-w", "--stdin", data=b"x")
    commit = git(root, "commit-tree", git(root, "write-tree"), "-m", "sub")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{commit},vendor")
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},ledger.txt")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "all kinds")
    return root


@pytest.mark.parametrize("exclude", ["ledger", "a", "link", "vendor", "missing"])
def test_the_in_process_tree_is_the_one_git_writes(repo: Path, exclude: str) -> None:
    wt = Worktree(repo)
    for spec in ("HEAD", git(repo, "rev-parse", "HEAD"), git(repo, "write-tree")):
        made = wt.tree_without(spec, exclude)
        assert made == by_git(repo, spec, exclude)
        assert git(repo, "cat-file", "-t", made) == "tree"


def test_a_tree_not_written_yet_is_written(repo: Path) -> None:
    wt = Worktree(repo)
    (repo / "new.txt").write_text("new")
    git(repo, "add", "new.txt")
    tree = git(repo, "write-tree")
    made = wt.tree_without(tree)  # no tree without `ledger` holds new.txt yet
    assert git(repo, "cat-file", "-t", made) == "tree"
    assert made == by_git(repo, tree, "ledger")


def test_a_zero_padded_mode_is_written_as_mktree_writes_it(repo: Path) -> None:
    """A tree from elsewhere with `040000` (git fsck's zeroPaddedFilemode) and entries out
    of order: the id is that of mktree's canonical tree, as before."""
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"x")
    sub = git(repo, "mktree", data=f"100644 blob {blob}\tf\n".encode())
    raw = (
        b"100644 b.txt\0"
        + bytes.fromhex(blob)
        + b"040000 a\0"
        + bytes.fromhex(sub)
        + b"100644 ledger\0"
        + bytes.fromhex(blob)
    )
    odd = git(repo, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", data=raw)
    assert Worktree(repo).tree_without(odd) == by_git(repo, odd, "ledger")
