"""open_worktree, ensure_worktree and list_worktrees: a goal's worktree is used only on its branch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import TrustFailure
from harness.store.gitrepo import Repo
from harness.store.worktree import (
    RegisteredWorktree,
    Worktree,
    ensure_worktree,
    list_worktrees,
    open_worktree,
    parse_worktrees,
)
from tests.managed import ManagedRepo, git

BRANCH = "harness/g1"


@pytest.fixture
def repo(managed: Callable[..., ManagedRepo]) -> Repo:
    return Repo.discover(managed(approve=False).root)


def test_missing_worktree_is_none(repo: Repo) -> None:
    assert open_worktree(repo, "g1", BRANCH) is None
    assert not repo.worktree_path("g1").exists()


def test_ensure_worktree_creates_the_branch_at_base(repo: Repo) -> None:
    base = repo.git("rev-parse", "HEAD")
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "later")
    wt = ensure_worktree(repo, "g1", BRANCH, base)
    assert wt == Worktree(repo.root / ".harness" / "worktrees" / "g1")
    assert (wt.branch(), wt.head()) == (BRANCH, base)
    assert repo.rev_parse(f"refs/heads/{BRANCH}") == base
    assert "/.harness/worktrees/" in (repo.common_dir / "info" / "exclude").read_text().split()
    assert open_worktree(repo, "g1", BRANCH) == wt
    assert ensure_worktree(repo, "g1", BRANCH, repo.git("rev-parse", "HEAD")).head() == base


def test_ensure_worktree_checks_out_an_existing_branch(repo: Repo) -> None:
    base = repo.git("rev-parse", "HEAD")
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "later")
    git(repo.root, "branch", BRANCH, base)
    wt = ensure_worktree(repo, "g1", BRANCH, repo.git("rev-parse", "HEAD"))
    assert (wt.branch(), wt.head()) == (BRANCH, base)


@pytest.mark.parametrize(
    ("move", "shown"),
    [
        (["checkout", "-q", "-b", "other"], "'other'"),
        (["checkout", "-q", "--detach"], "'a detached HEAD'"),
    ],
)
def test_worktree_on_another_branch_is_refused(repo: Repo, move: list[str], shown: str) -> None:
    wt = ensure_worktree(repo, "g1", BRANCH, repo.git("rev-parse", "HEAD"))
    git(wt.path, *move)
    message = (
        f"{wt.path}: the worktree is on {shown}, not '{BRANCH}'; "
        "check it out again or remove it with `git worktree remove`"
    )
    for call in (open_worktree, lambda r, g, b: ensure_worktree(r, g, b, "HEAD")):
        with pytest.raises(TrustFailure) as caught:
            call(repo, "g1", BRANCH)
        assert str(caught.value) == message


# ---- listing worktrees (what doctor reports) ----


def run_git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_parse_worktrees() -> None:
    porcelain = (
        "worktree /r\nHEAD abc\nbranch refs/heads/main\n\n"
        "worktree /r/.harness/worktrees/g1\nHEAD def\nbranch refs/heads/harness/g1\n\n"
        "worktree /r/.harness/worktrees/g2\nHEAD 123\ndetached\n"
        "prunable gitdir file points to non-existent location\n\n"
        "worktree /r/with space\nHEAD 456\ndetached\nprunable\n"
    )
    assert parse_worktrees(porcelain) == [
        RegisteredWorktree(Path("/r"), "abc", "refs/heads/main", None),
        RegisteredWorktree(Path("/r/.harness/worktrees/g1"), "def", "refs/heads/harness/g1", None),
        RegisteredWorktree(
            Path("/r/.harness/worktrees/g2"),
            "123",
            None,
            "gitdir file points to non-existent location",
        ),
        RegisteredWorktree(Path("/r/with space"), "456", None, ""),
    ]


def test_parse_worktrees_of_nothing() -> None:
    assert parse_worktrees("") == []


def test_list_worktrees_of_a_real_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    run_git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q",
        "--allow-empty", "-m", "one")  # fmt: skip
    head = run_git(root, "rev-parse", "HEAD")
    on_branch, detached, gone = (root / ".harness" / "worktrees" / n for n in ("g1", "g2", "g3"))
    run_git(root, "worktree", "add", "-q", "-b", "harness/g1", str(on_branch))
    run_git(root, "worktree", "add", "-q", "--detach", str(detached))
    run_git(root, "worktree", "add", "-q", "-b", "harness/g3", str(gone))
    shutil.rmtree(gone)

    found = list_worktrees(Repo.discover(root))

    assert [(wt.path, wt.head, wt.branch) for wt in found] == [
        (root, head, "refs/heads/main"),
        (on_branch, head, "refs/heads/harness/g1"),
        (detached, head, None),
        (gone, head, "refs/heads/harness/g3"),
    ]
    assert [wt.prunable is not None for wt in found] == [False, False, False, True]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="parallel checkout needs two cores")
def test_a_goal_worktree_is_written_by_gits_parallel_checkout(
    managed: Callable[..., ManagedRepo], tmp_path: Path
) -> None:
    """A tree of 100 files or more is checked out by git's workers (`checkout.workers`,
    performance.md), seen in a trace of the real `harness run` that makes the worktree."""
    files = {f"src/f{n:03d}.txt": f"{n}\n" for n in range(150)}
    repo = managed(mode="fix-on-1", files=files)
    trace = tmp_path / "trace"
    trace.mkdir()
    repo.harness("run", "--max-steps", "1", env={**repo.env, "GIT_TRACE2_EVENT": str(trace)})
    started = [
        json.loads(line)["argv"]
        for path in trace.iterdir()
        for line in path.read_text().splitlines()
        if '"event":"start"' in line
    ]
    assert any("checkout--worker" in argv for argv in started), started
    assert (repo.worktree / "src" / "f149.txt").read_text() == "149\n"
