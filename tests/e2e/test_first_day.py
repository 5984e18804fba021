"""Issue 18, "first-day papercuts": what a new team met following the guide."""

from __future__ import annotations

from tests.managed import ManagedFactory, ManagedRepo, git


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
