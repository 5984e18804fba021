"""The fast scan (issue 19) gives the verdicts a full rescan gives.

The harness stages a goal's worktree from one `git status` scan (its untracked cache and the
index's stat data warm from the checkpoint before) and commits named paths on top of it. A
full rescan is the slowest honest answer: every file hashed again into a fresh, empty index
with `git add -A`. Over random changes (files created, modified with and without a size
change, deleted, renamed, made executable or not, replaced by symlinks, in new folders, in
ignored folders, matching ignore patterns, in the protected paths) both must give the same
tree, hence the same changed paths, the same tamper verdict and the same read-only verdict;
and a checkpoint's commit must hold exactly the scanned tree plus the goal's record.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.loop.guards import is_protected
from harness.store.worktree import Worktree

PATHS = [
    "src/a.py",
    "src/b.py",
    "src/deep/c.py",
    "src/deep/d.txt",
    "new/e.py",
    "new/sub/f.txt",
    "build/out.bin",  # an ignored folder
    "src/trace.log",  # an ignored pattern
    "docs/g.md",
    "goals/x.yaml",  # protected
    "ledger/other/state.json",  # protected (another goal's record)
    "top.txt",
]
CONTENTS = [b"", b"one\n", b"two\n", b"three lines\nof\ntext\n", b"\x00\x01bin"]
OPS = st.tuples(
    st.sampled_from(["write", "delete", "rename", "chmod", "symlink", "touch"]),
    st.sampled_from(PATHS),
    st.sampled_from(PATHS),
    st.sampled_from(CONTENTS),
)


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)
    return proc.stdout.decode().strip()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed repository, as a goal's worktree looks after a checkpoint."""
    root = tmp_path_factory.mktemp("scan") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = {
        ".gitignore": b"build/\n*.log\n",
        "src/a.py": b"print(1)\n",
        "src/b.py": b"print(2)\n",
        "src/deep/c.py": b"x = 3\n",
        "docs/g.md": b"# g\n",
        "goals/x.yaml": b"id: x\n",
        "ledger/g/events/000001.jsonl": b"{}\n",
        "ledger/g/state.json": b"{}\n",
        "top.txt": b"top\n",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    git(root, "add", "-A")
    git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one")
    return root


def full_rescan(root: Path, scratch: Path) -> str:
    """The whole tree from nothing: every file hashed into a fresh, empty index."""
    index = scratch / "fresh-index"
    index.unlink(missing_ok=True)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    git(root, "add", "-A", env=env)
    return git(root, "write-tree", env=env)


def apply(root: Path, op: tuple[str, str, str, bytes]) -> None:
    kind, path, other, data = op
    target, dest = root / path, root / other
    if kind == "write":
        if target.is_symlink() or target.is_file():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            return
        target.write_bytes(data)
    elif kind == "touch" and target.is_file() and not target.is_symlink():
        # The same size and the same mtime: only the content differs (racy git).
        info = target.stat()
        size = len(target.read_bytes())
        target.write_bytes(bytes(reversed(target.read_bytes())) if size else b"")
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif kind == "delete" and (target.is_symlink() or target.is_file()):
        target.unlink()
    elif kind == "rename" and target.is_file() and not dest.exists() and path != other:
        dest.parent.mkdir(parents=True, exist_ok=True)
        target.rename(dest)
    elif kind == "chmod" and target.is_file() and not target.is_symlink():
        target.chmod(target.stat().st_mode ^ 0o111)
    elif kind == "symlink" and not target.is_dir():
        if target.is_symlink() or target.exists():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(other)


def verdicts(wt: Worktree, base_tree: str, tree: str) -> tuple[list[str], bool, bool]:
    """What the loop decides from a tree: the changed paths, tamper, read-only violation."""
    changed = wt.tree_changes(base_tree, tree)
    return changed, any(is_protected(p) for p in changed), tree != base_tree


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rounds=st.lists(st.lists(OPS, min_size=1, max_size=6), min_size=1, max_size=3))
def test_the_fast_scan_gives_a_full_rescans_verdicts(
    template: Path,
    tmp_path_factory: pytest.TempPathFactory,
    rounds: list[list[tuple[str, str, str, bytes]]],
) -> None:
    scratch = tmp_path_factory.mktemp("example")
    root = scratch / "repo"
    shutil.copytree(template, root, symlinks=True)
    wt = Worktree(root)
    base_tree = wt.work_tree_id()  # as the checkpoint before the step left it
    wt.commit("base", ["ledger/g"])
    for ops in rounds:
        if any(op[0] == "touch" for op in ops):
            # git compares whole seconds of ctime and mtime (built without USE_NSEC): a
            # rewrite of the same size with its mtime put back, in the same second as the
            # file's last change, looks unchanged to git's stat data. That limit is git's
            # and `git add -A` had it too; the example waits for the next second.
            time.sleep(1.01 - time.time() % 1)
        for op in ops:
            apply(root, op)
        base = wt.head()
        whole = full_rescan(root, scratch)
        slow = wt.tree_without(whole)
        fast = wt.work_tree_id()
        assert fast == slow
        assert verdicts(wt, base_tree, fast) == verdicts(wt, base_tree, slow)
        changed = wt.changed_paths(base)  # the build's listing, from one more fast scan
        assert changed == wt.tree_changes(base, whole)
        # A checkpoint commits exactly the scanned tree plus the goal's own record.
        (root / "ledger/g/state.json").write_bytes(os.urandom(8).hex().encode())
        commit = wt.commit("step", ["ledger/g"])
        assert wt.tree_without(commit) == fast
        assert git(root, "status", "--porcelain", "--", "ledger/g") == ""
        base_tree = fast
