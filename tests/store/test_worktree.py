"""worktree: the registered worktrees as git lists them, on a real temp repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from harness.store.gitrepo import Repo
from harness.store.worktree import RegisteredWorktree, list_worktrees, parse_worktrees


def git(cwd: Path, *args: str) -> str:
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
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q",
        "--allow-empty", "-m", "one")  # fmt: skip
    head = git(root, "rev-parse", "HEAD")
    on_branch, detached, gone = (root / ".harness" / "worktrees" / n for n in ("g1", "g2", "g3"))
    git(root, "worktree", "add", "-q", "-b", "harness/g1", str(on_branch))
    git(root, "worktree", "add", "-q", "--detach", str(detached))
    git(root, "worktree", "add", "-q", "-b", "harness/g3", str(gone))
    shutil.rmtree(gone)

    found = list_worktrees(Repo.discover(root))

    assert [(wt.path, wt.head, wt.branch) for wt in found] == [
        (root, head, "refs/heads/main"),
        (on_branch, head, "refs/heads/harness/g1"),
        (detached, head, None),
        (gone, head, "refs/heads/harness/g3"),
    ]
    assert [wt.prunable is not None for wt in found] == [False, False, False, True]
