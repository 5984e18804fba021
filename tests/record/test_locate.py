"""locate: a goal's record is read from its worktree, else its branch, else a ledger folder
in the checkout; with none of them it is InvalidInput."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.record.hydrate import Committed, load
from harness.record.locate import Located, locate
from tests.inprocess import InProcess
from tests.managed import ManagedRepo, git

BRANCH = "harness/g1"
SEGMENT = "000001.jsonl"


@pytest.fixture
def here(managed: Callable[..., ManagedRepo]) -> InProcess:
    here = InProcess(managed(mode="fix-on-1"))
    assert here.advance().status == "completed"
    return here


def _status(here: InProcess, located: Located) -> str:
    return load(located.paths, here.key, located.committed, repair=False).cell.status


def _remove_worktree(here: InProcess) -> None:
    git(here.repo.root, "worktree", "remove", "--force", str(here.repo.worktree))


def test_worktree_comes_first(here: InProcess) -> None:
    with locate(here.git_repo, "g1", BRANCH) as located:
        assert (located.origin, located.paths) == ("worktree", here.paths)
        assert located.committed is not None and located.committed.previous is not None
        assert located.committed.cell == here.paths.cell.read_bytes()
        assert _status(here, located) == "completed"


def test_then_the_branch(here: InProcess) -> None:
    cell = here.paths.cell.read_bytes()
    events = (here.paths.events / SEGMENT).read_bytes()
    _remove_worktree(here)
    with locate(here.git_repo, "g1", BRANCH) as located:
        assert located.origin == "branch"
        folder = located.paths.root
        assert folder != here.repo.root and located.paths.cell.read_bytes() == cell
        assert located.committed == Committed(cell, {SEGMENT: len(events)})
        assert _status(here, located) == "completed"
    assert not folder.exists()  # the extracted copy is gone once the caller is done


def test_then_a_ledger_folder_in_the_checkout(here: InProcess) -> None:
    shutil.copytree(here.paths.folder, here.repo.root / "ledger" / "g1")
    _remove_worktree(here)
    git(here.repo.root, "branch", "-q", "-D", BRANCH)
    git(here.repo.root, "add", "ledger")
    git(here.repo.root, "commit", "-qm", "copy the record")
    # This clone ran the goal: with its branch gone, its record is lost here until the
    # goal is retired on purpose (its marker removed, as the refusal says).
    lost = r"remove \.git/harness/records/g1$"
    with pytest.raises(TrustFailure, match=lost), locate(here.git_repo, "g1", BRANCH):
        pass
    (here.repo.root / ".git" / "harness" / "records" / "g1").unlink()
    with locate(here.git_repo, "g1", BRANCH) as located:
        assert (located.origin, located.paths.root) == ("checkout", here.repo.root)
        assert located.committed is not None and located.committed.previous is None
        assert _status(here, located) == "completed"


def test_no_record_at_all_is_invalid_input(here: InProcess) -> None:
    with pytest.raises(InvalidInput) as caught, locate(here.git_repo, "g2", "harness/g2"):
        pass
    assert (
        str(caught.value)
        == "goal g2: no record yet (no worktree, no branch harness/g2, no ledger/g2)"
    )


def test_worktree_on_the_wrong_branch_is_refused_not_skipped(here: InProcess) -> None:
    git(here.repo.worktree, "checkout", "-q", "-b", "elsewhere")
    with pytest.raises(TrustFailure), locate(here.git_repo, "g1", BRANCH):
        pass
