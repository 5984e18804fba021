"""open_worktree and ensure_worktree: a goal's worktree is used only on the goal's branch."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.errors import TrustFailure
from harness.store.gitrepo import Repo, Worktree
from harness.store.worktree import ensure_worktree, open_worktree
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
