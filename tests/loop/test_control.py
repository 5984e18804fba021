"""open_control and Control: everything is read from the committed control ref, never from
the working copy; misnamed goal files are never goals; no owners fails closed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.loop.control import open_control
from harness.store.gitrepo import Repo
from tests.inprocess import SECRET_VALUE
from tests.managed import OWNER, ManagedRepo, git

Managed = Callable[..., ManagedRepo]
NO_OWNERS = (
    ".harness/owners: missing on refs/heads/main: nobody can approve a goal "
    "(run `harness init --owner P --key PUBKEY` and commit)"
)


def _commit(repo: ManagedRepo, message: str = "change") -> None:
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", message)


def test_reads_the_committed_ref_not_the_working_copy(managed: Managed) -> None:
    repo = managed()
    committed = (repo.root / "goals" / "g1.yaml").read_bytes()
    (repo.root / "goals" / "g1.yaml").write_bytes(committed.replace(b"say right", b"say left"))
    (repo.root / "goals" / "g2.yaml").write_bytes(committed.replace(b"id: g1", b"id: g2"))
    (repo.root / ".harness" / "owners").write_text("")
    control = open_control(Repo.discover(repo.root), SECRET_VALUE)
    assert (control.ref, control.commit) == ("refs/heads/main", git(repo.root, "rev-parse", "HEAD"))
    assert control.goal_bytes("g1") == committed
    assert control.goal("g1").objective == "Make value.txt say right.\n"
    assert control.goal_ids() == ["g1"]
    assert control.principals() == {OWNER}
    assert control.run_approval(control.goal("g1")).principals == (OWNER,)


def test_control_ref_in_the_config_wins(managed: Managed) -> None:
    repo = managed()
    git(repo.root, "branch", "control")
    (repo.root / ".harness" / "config.yaml").write_text("version: 1\ncontrol_ref: control\n")
    git(repo.root, "rm", "-q", "goals/g1.yaml")
    _commit(repo)
    control = open_control(Repo.discover(repo.root))
    assert (control.ref, control.commit) == ("control", git(repo.root, "rev-parse", "control"))
    assert control.goal_ids() == ["g1"]  # still on the control branch, gone from main


def test_misnamed_goal_files_are_listed_apart_and_never_goals(managed: Managed) -> None:
    repo = managed()
    for name in ("Bad_Name.yaml", "-dash.yaml", "notes.txt", "g2.yml"):
        (repo.root / "goals" / name).write_text("version: 1\n")
    _commit(repo)
    control = open_control(Repo.discover(repo.root))
    assert control.goal_ids() == ["g1"]
    assert control.misnamed_goal_files() == ["-dash", "Bad_Name"]
    with pytest.raises(InvalidInput) as caught:
        control.goal_bytes("Bad_Name")
    assert str(caught.value) == (
        "goal id: id: 'Bad_Name' is not a valid goal id (expected 1 to 63 lowercase letters, "
        "digits or '-', starting with a letter or digit)"
    )
    with pytest.raises(InvalidInput) as caught:
        control.goal_bytes("g9")
    assert str(caught.value) == (
        "goals/g9.yaml: no such goal on refs/heads/main (commit the goal file first)"
    )


def test_missing_owners_fails_closed(managed: Managed) -> None:
    repo = managed()
    git(repo.root, "rm", "-q", ".harness/owners")
    _commit(repo)
    control = open_control(Repo.discover(repo.root))
    assert control.owners_text is None
    for read in (
        control.owners,
        control.principals,
        lambda: control.run_approval(control.goal("g1")),
    ):
        with pytest.raises(TrustFailure) as caught:
            read()
        assert str(caught.value) == NO_OWNERS


def test_unreadable_owners_fails_closed(managed: Managed) -> None:
    repo = managed()
    (repo.root / ".harness" / "owners").write_text("garbage\n")
    _commit(repo)
    with pytest.raises(TrustFailure) as caught:
        open_control(Repo.discover(repo.root)).owners()
    assert str(caught.value) == (
        ".harness/owners: line 1: no key on the line (expected principals "
        '[namespaces="..."] ssh-ed25519 <base64 key> [comment]); '
        "nothing runs until .harness/owners is fixed"
    )


@pytest.mark.parametrize(
    ("config", "branch"),
    [(None, "harness/g1"), ("version: 1\nbranch_prefix: agents/\n", "agents/g1")],
)
def test_branch_is_the_prefix_and_the_id(managed: Managed, config: str | None, branch: str) -> None:
    repo = managed()
    if config is not None:
        (repo.root / ".harness" / "config.yaml").write_text(config)
        _commit(repo)
    assert open_control(Repo.discover(repo.root)).branch("g1") == branch


def test_repository_without_commits_is_refused(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    with pytest.raises(InvalidInput) as caught:
        open_control(Repo.discover(tmp_path))
    assert str(caught.value) == f"{tmp_path}: the repository has no commits yet; commit first"
