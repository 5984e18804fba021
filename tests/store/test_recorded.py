"""Which goals this clone kept a record of (store/recorded.py), and what git says of a goal
branch that names no commit (objects.ref_trouble, objects.branches)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.store.gitrepo import Repo
from harness.store.objects import MISSING, branches, ref_trouble, restore_hint
from harness.store.recorded import marker, recorded_goals, remember


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "first")
    return Repo.discover(root)


def test_a_marker_is_written_once_and_listed_without_creating_anything(repo: Repo) -> None:
    assert recorded_goals(repo) == set()
    assert not (repo.common_dir / "harness").exists()  # verify reads where .git is read-only
    remember(repo, "g1", "harness/g1")
    written = os.stat(marker(repo, "g1")).st_mtime_ns
    remember(repo, "g1", "bots/g1")  # once: a second call changes nothing
    assert marker(repo, "g1").read_text() == "harness/g1\n"
    assert os.stat(marker(repo, "g1")).st_mtime_ns == written
    (marker(repo, "g1").parent / ".g2.abc.tmp").write_text("")  # an atomic write's leftover
    assert recorded_goals(repo) == {"g1"}


def test_what_a_goal_branch_that_names_no_commit_is(repo: Repo) -> None:
    root, ref = repo.root, "refs/heads/harness/g1"
    assert ref_trouble(root, ref) == MISSING
    git(root, "branch", "harness/g1")
    assert ref_trouble(root, ref) is None
    loose = repo.common_dir / "refs" / "heads" / "harness" / "g1"
    loose.write_text("")
    assert ref_trouble(root, ref) == (
        "is broken (its ref is empty or not a commit id, as a power cut can leave it)"
    )
    assert branches(root, "harness/") == ({}, {"harness/g1"})
    loose.write_text("1" * 40 + "\n")
    assert ref_trouble(root, ref) == (
        f"names a commit git cannot read (missing object {'1' * 40} for {ref})"
    )


@pytest.mark.parametrize(
    ("trouble", "last", "hint"),
    [
        (
            MISSING,
            "a" * 40,
            f"put the branch back with `git update-ref refs/heads/harness/g1 {'a' * 40}`, or "
            "fetch it from a remote or another clone",
        ),
        (
            "is broken (…)",
            None,
            "put the branch back with `rm .git/refs/heads/harness/g1`, then `git update-ref "
            "refs/heads/harness/g1 <commit>` (`git fsck --lost-found` lists the commits no "
            "branch holds), or fetch it from a remote or another clone",
        ),
    ],
)
def test_the_way_back_works_without_a_remote(trouble: str, last: str | None, hint: str) -> None:
    assert restore_hint("harness/g1", trouble, last) == hint
