"""open_session on real temp repositories: the order of its checks, and what it opens."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.commands.session import open_session
from harness.errors import InvalidInput, TrustFailure
from tests.managed import SECRET, ManagedRepo, git


def _no_secret(tmp_path: Path) -> dict[str, str]:
    return {"HARNESS_SECRET_FILE": str(tmp_path / "no-such-secret")}


def _empty_repo(tmp_path: Path) -> Path:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def test_a_bad_goal_id_is_reported_before_the_repository_is_looked_for(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="goal id"), open_session(tmp_path, {}, ["ok", "../x"]):
        pass


def test_no_repository_is_reported_before_the_secret(tmp_path: Path) -> None:
    with (
        pytest.raises(InvalidInput, match="not inside a git repository"),
        open_session(tmp_path, _no_secret(tmp_path), ["g1"]),
    ):
        pass


def test_a_missing_secret_is_reported_before_the_control_ref_is_read(tmp_path: Path) -> None:
    root = _empty_repo(tmp_path)  # no commit: reading the control ref would fail too
    with (
        pytest.raises(TrustFailure, match="no secret"),
        open_session(root, _no_secret(tmp_path), []),
    ):
        pass
    with (
        pytest.raises(InvalidInput, match="no commits yet"),
        open_session(root, {"HARNESS_SECRET": SECRET}, []),
    ):
        pass


def test_without_need_secret_the_control_ref_comes_first(tmp_path: Path) -> None:
    root = _empty_repo(tmp_path)
    with (
        pytest.raises(InvalidInput, match="no commits yet"),
        open_session(root, _no_secret(tmp_path), [], need_secret=False),
    ):
        pass


def test_without_need_secret_a_missing_secret_is_none(managed: Any, tmp_path: Path) -> None:
    repo: ManagedRepo = managed()
    with open_session(repo.root, _no_secret(tmp_path), ["g1"], need_secret=False) as session:
        assert session.secret is None
        assert session.control.goal_ids() == ["g1"]
    with open_session(repo.root, repo.env, ["g1"], need_secret=False) as session:
        assert session.secret is not None and session.secret.origin == "HARNESS_SECRET"


def test_the_session_names_the_repository_from_a_subfolder(managed: Any) -> None:
    repo: ManagedRepo = managed()
    with open_session(repo.root / "goals", repo.env, []) as session:
        assert session.repo.root == repo.root
        assert session.secret.origin == "HARNESS_SECRET"
        assert session.control.ref == "refs/heads/main"


def test_the_control_reader_ends_with_the_session(managed: Any) -> None:
    repo: ManagedRepo = managed()
    with open_session(repo.root, repo.env, []) as session:
        assert session.control.goal_ids() == ["g1"]  # starts the cat-file process
        proc = session.control.objects._proc
        assert proc is not None and proc.poll() is None
    assert proc.poll() is not None and session.control.objects._proc is None


def test_the_control_reader_ends_when_the_command_fails(managed: Any) -> None:
    repo: ManagedRepo = managed()
    procs: list[subprocess.Popen[bytes] | None] = []
    with pytest.raises(RuntimeError), open_session(repo.root, repo.env, []) as session:
        session.control.goal_ids()
        procs.append(session.control.objects._proc)
        raise RuntimeError("the command failed")
    assert procs[0] is not None and procs[0].poll() is not None
