"""Issue 18, "first-day papercuts": what a new team met following the guide."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.managed import SECRET, ManagedFactory, ManagedRepo, base_goal, git


def _crlf_checkout(repo: ManagedRepo) -> None:
    """core.autocrlf=true and the goal file checked out again: CRLF in the working copy,
    LF in the blob git stores (what `run` reads)."""
    git(repo.root, "config", "core.autocrlf", "true")
    (repo.root / "goals" / "g1.yaml").unlink()
    git(repo.root, "checkout", "--", "goals/g1.yaml")
    assert b"\r\n" in (repo.root / "goals" / "g1.yaml").read_bytes()


def test_core_autocrlf_approval_hashes_what_git_stores(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    _crlf_checkout(repo)
    approved = repo.harness("approve", "g1", "--key", str(repo.key.private), check=0).stdout
    assert "goals/g1.yaml: the working copy differs from the blob git stores" in approved
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve g1")
    checked = repo.harness("check", check=0).stdout
    assert "ok: 1 goal(s)" in checked
    assert "goals/g1.yaml: the working copy differs from the blob git stores" in checked
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_check_refuses_an_approval_run_would_refuse(managed: ManagedFactory) -> None:
    """Approved with the CRLF bytes (what `approve` signed before): `check` must say what
    `run` says, not `ok`."""
    repo = managed(approve=False)
    _crlf_checkout(repo)
    import hashlib

    from harness.trust.approvals import append_record
    from harness.trust.sshsig import sign
    from harness.trust.statement import Statement

    crlf = (repo.root / "goals" / "g1.yaml").read_bytes()
    statement = Statement(goal="g1", sha256=hashlib.sha256(crlf).hexdigest(), decision="run")
    append_record(
        repo.root / "goals" / "g1.approval",
        statement,
        sign(statement.to_bytes(), repo.key.private),
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve g1 the old way")
    checked = repo.harness("check", check=3)
    ran = repo.harness("run", check=3)
    assert "approv" in checked.stdout and "approv" in ran.stderr


@pytest.mark.parametrize(
    "args", [("status",), ("status", "--check"), ("status", "--json"), ("verify",), ("run",)]
)
def test_a_repository_without_harness_files_is_exit_2_not_silence(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A cron line with the wrong `cd` must not look green for ever."""
    root = tmp_path / "plain"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("not managed\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a plain repository")
    env = {**os.environ, "HARNESS_SECRET": SECRET}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "not a harness repository (refs/heads/main has no .harness/owners)" in proc.stderr


def test_goal_files_in_a_subfolder_or_named_yml_get_a_note(managed: ManagedFactory) -> None:
    repo = managed(files={"goals/team/x.yaml": "id: x\n", "goals/x.yml": "id: x\n"})
    checked = repo.harness("check", check=0).stdout
    folder = "goals/team/: ignored (goal files sit directly in goals/, not in a subfolder)"
    suffix = "goals/x.yml: ignored (a goal file's name ends in .yaml: rename it goals/x.yaml)"
    assert f"note: {folder}\n" in checked and f"note: {suffix}\n" in checked
    ran = repo.harness("run", check=0)
    assert f"harness: note: {folder}\n" in ran.stderr
    assert f"harness: note: {suffix}\n" in ran.stderr
    assert repo.status()["status"] == "completed"


def test_run_with_nothing_runnable_says_why(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"ship": {"run": ["sh", "-c", "touch SHIPPED"]}})
    repo.harness("run", check=0)
    again = repo.harness("run", check=0)
    assert again.stdout == ""
    assert again.stderr == (
        "harness: nothing to run: g1 waits for a decision (parked_at_eyes, gate ship)\n"
    )


def test_an_initialised_repository_without_goals_says_so(managed: ManagedFactory) -> None:
    repo = managed()
    git(repo.root, "rm", "-q", "goals/g1.yaml", "goals/g1.approval")
    git(repo.root, "commit", "-qm", "no goals")
    assert repo.harness("run", check=0).stderr == (
        "harness: note: nothing to run: no goals on main (`harness new <id>`, approve it, commit)\n"
    )
    assert "no goals yet on main" in repo.harness("status", check=0).stderr
    verified = repo.harness("verify", check=0)
    assert verified.stderr == "harness: note: nothing to verify: no goal has records yet\n"

