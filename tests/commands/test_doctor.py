"""`harness doctor` on real temp repositories: each problem named with its fix, a healthy
repository passing, and the secret never printed."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.cli import cli
from harness.commands.doctor import doctor, parse_git_version
from harness.commands.doctor import machine as doctor_machine
from harness.store.gitrepo import run_git
from harness.store.lock import GoalLock
from tests.managed import SECRET, ManagedFactory, ManagedRepo, git


def _doctor(root: Path, env: dict[str, str], as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    code = doctor(root, env, out, as_json)
    return code, out.getvalue()


def _lines(text: str, status: str, check: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"{status} {check}: ")]


def _fix_after(text: str, line: str) -> str:
    lines = text.splitlines()
    following = lines[lines.index(line) + 1]
    assert following.startswith("  fix: "), following
    return following


def _without_secret(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in env.items() if k != "HARNESS_SECRET"}
    env["HARNESS_SECRET_FILE"] = str(tmp_path / "no-such-secret")
    return env


def test_healthy_repository_passes(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    code, text = _doctor(repo.root, repo.env)
    assert code == 0, text
    assert not [line for line in text.splitlines() if line.startswith("fail ")]
    assert f"ok secret: {len(SECRET)} bytes from HARNESS_SECRET" in text
    assert "ok owners: 1 key(s) for owner@example.com" in text
    assert "ok goal g1: valid and approved" in text
    assert "ok committed: goals and .harness files match main" in text
    assert "ok records: no goal has started yet" in text
    assert text.splitlines()[-1].endswith(" 0 fail")


def test_healthy_after_a_run(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    code, text = _doctor(repo.root, repo.env)
    assert code == 0, text
    assert "ok records: 1 goal record(s); each state cell's MAC matches the secret" in text
    assert "ok worktrees: 1 goal worktree(s), each on its goal branch" in text
    assert "ok locks: 1 lock file(s), none held" in text


def test_missing_secret_is_a_trust_failure_with_its_fix(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed()
    code, text = _doctor(repo.root, _without_secret(repo.env, tmp_path))
    assert code == 3
    [line] = _lines(text, "fail", "secret")
    assert f"{tmp_path / 'no-such-secret'} does not exist" in line
    assert "run `harness secret new`" in _fix_after(text, line)
    # The records cannot be checked without a secret: no `records` check is made.
    assert not any(" records: " in row for row in text.splitlines())


def test_short_secret_is_reported_without_its_value(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    short = "tiny-secret-value"
    code, text = _doctor(repo.root, {**repo.env, "HARNESS_SECRET": short})
    assert code == 3
    [line] = _lines(text, "fail", "secret")
    assert f"is {len(short)} bytes; at least 32 are required" in line
    assert short not in text


def test_malformed_owners_names_the_line_and_the_fix(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    owners = repo.root / ".harness" / "owners"
    owners.write_text(owners.read_text() + "mallory ssh-rsa AAAAB3NzaC1yc2E\n")
    code, text = _doctor(repo.root, repo.env)
    assert code == 2
    [line] = _lines(text, "fail", "owners")
    assert line.startswith(
        "fail owners: .harness/owners: line 2: key type ssh-rsa is not supported"
    )
    assert "correct that line: each line is `principal ssh-ed25519 AAAA… [comment]`" in (
        _fix_after(text, line)
    )
    assert "warn goal g1: valid; approval not checked" in text
    assert (
        "warn committed: `harness run` reads main; the checkout differs: .harness/owners (modified)"
        in text
    )


def test_missing_and_empty_owners(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    owners = repo.root / ".harness" / "owners"
    owners.write_text("# nobody yet\n")
    code, text = _doctor(repo.root, repo.env)
    assert code == 2
    assert "fail owners: .harness/owners lists no owner" in text
    owners.unlink()
    code, text = _doctor(repo.root, repo.env)
    [line] = _lines(text, "fail", "owners")
    assert line == "fail owners: .harness/owners does not exist"
    assert "harness init --owner" in _fix_after(text, line)


def test_unapproved_goal_is_a_warning(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed(approve=False)
    code, text = _doctor(repo.root, repo.env)
    assert code == 0
    [line] = _lines(text, "warn", "goal g1")
    assert line == "warn goal g1: valid, not approved yet"
    assert "`harness approve g1 --key" in _fix_after(text, line)


def test_goal_edited_after_approval_fails_as_trust(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    goal = repo.root / "goals" / "g1.yaml"
    goal.write_text(goal.read_text().replace("max_iterations: 3", "max_iterations: 4"))
    code, text = _doctor(repo.root, repo.env)
    assert code == 3
    [line] = _lines(text, "fail", "goal g1")
    assert "harness approve g1" in _fix_after(text, line)
    assert "goals/g1.yaml (modified)" in text


def test_invalid_goal_names_the_key(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    goal = repo.root / "goals" / "g1.yaml"
    goal.write_text(goal.read_text() + "colour: blue\n")
    code, text = _doctor(repo.root, repo.env)
    assert code == 2
    [line] = _lines(text, "fail", "goal g1")
    assert "goals/g1.yaml" in line and "colour" in line


def test_wrong_secret_fails_the_records_check(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    other = "another-secret-0123456789abcdef0123456789"
    code, text = _doctor(repo.root, {**repo.env, "HARNESS_SECRET": other})
    assert code == 3
    [line] = _lines(text, "fail", "records")
    assert "harness verify" in _fix_after(text, line)
    assert other not in text and SECRET not in text


def test_the_secret_never_appears(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    secret_file.chmod(0o644)
    from_file = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    from_file["HARNESS_SECRET_FILE"] = str(secret_file)
    for env in (repo.env, from_file, _without_secret(repo.env, tmp_path)):
        for as_json in (False, True):
            _, text = _doctor(repo.root, env, as_json)
            assert SECRET not in text
            assert SECRET.encode().hex() not in text


def test_secret_file_readable_by_others_is_a_warning(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed()
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    env["HARNESS_SECRET_FILE"] = str(secret_file)
    secret_file.chmod(0o640)
    code, text = _doctor(repo.root, env)
    assert code == 0
    [line] = _lines(text, "warn", "secret-file")
    assert "readable or writable by group or others (mode 0640)" in line
    assert _fix_after(text, line) == f"  fix: chmod 600 {secret_file}"
    assert f"ok secret: {len(SECRET)} bytes from {secret_file}" in text
    secret_file.chmod(0o600)
    _, text = _doctor(repo.root, env)
    assert f"ok secret-file: {secret_file} (mode 0600)" in text


def test_worktree_on_another_branch_fails(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    git(repo.worktree, "switch", "-q", "-c", "elsewhere")
    code, text = _doctor(repo.root, repo.env)
    assert code == 3
    [line] = _lines(text, "fail", "worktrees")
    assert f"{repo.worktree} is on elsewhere, not harness/g1; harness run refuses it" in line
    assert "git worktree remove" in _fix_after(text, line)


def test_stale_worktree_entry_and_stray_folder_are_warnings(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    shutil.rmtree(repo.worktree)
    stray = repo.root / ".harness" / "worktrees" / "leftover"
    stray.mkdir()
    code, text = _doctor(repo.root, repo.env)
    assert code == 0, text
    [line] = _lines(text, "warn", "worktrees")
    assert f"{repo.worktree} is a stale entry" in line
    assert f"{stray} is not a git worktree" in line
    assert "`git worktree prune`" in _fix_after(text, line)


def test_held_lock_is_reported_with_its_pid(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    with GoalLock(repo.root / ".git" / "harness" / "locks", "g1"):
        code, text = _doctor(repo.root, repo.env)
    assert code == 0
    assert f"ok locks: held now: g1 by process {os.getpid()}" in text
    _, text = _doctor(repo.root, repo.env)
    assert "ok locks: 1 lock file(s), none held" in text


def test_outside_a_repository(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESS_SECRET": SECRET}
    code, text = _doctor(tmp_path, env)
    assert code == 2
    [line] = _lines(text, "fail", "repository")
    assert "not inside a git repository" in line
    assert "ok git: " in text and "ssh-keygen: " in text


def test_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    code, text = _doctor(tmp_path, {**os.environ, "HARNESS_SECRET": SECRET})
    assert code == 2
    assert f"fail repository: {tmp_path} has no commits yet" in text


def test_json_is_one_list_of_findings(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed()
    code, text = _doctor(repo.root, _without_secret(repo.env, tmp_path), as_json=True)
    assert code == 3
    findings = json.loads(text)
    assert all(set(f) == {"check", "status", "finding", "fix"} for f in findings)
    secret = next(f for f in findings if f["check"] == "secret")
    assert secret["status"] == "fail" and "harness secret new" in secret["fix"]
    assert all(f["fix"] is None for f in findings if f["status"] == "ok")


def test_old_git_fails(managed: ManagedFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # An old git cannot be installed for a test; only its version line is replaced.
    repo: ManagedRepo = managed()
    real = run_git

    def old_git(args: list[str], cwd: Path, **kw: Any) -> subprocess.CompletedProcess[bytes]:
        if args == ["--version"]:
            return subprocess.CompletedProcess(args, 0, b"git version 2.25.1\n", b"")
        return real(args, cwd, **kw)

    monkeypatch.setattr(doctor_machine, "run_git", old_git)
    code, text = _doctor(repo.root, repo.env)
    assert code == 2
    assert "fail git: 2.25.1 is older than 2.31" in text


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("git version 2.39.5", (2, 39)),
        ("git version 2.39.2 (Apple Git-143)", (2, 39)),
        ("git version 2.31.0.windows.1", (2, 31)),
        ("git version 3.0", (3, 0)),
        ("not git", None),
    ],
)
def test_parse_git_version(text: str, version: tuple[int, int] | None) -> None:
    assert parse_git_version(text) == version


# --- through the command line (once harness/cli.py wires `harness doctor`) --------------

needs_wiring = pytest.mark.skipif(
    "doctor" not in cli.commands,
    reason="`harness doctor` is not wired into harness/cli.py yet",
)


@needs_wiring
def test_cli_doctor_exit_codes(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed()
    healthy = repo.harness("doctor", check=0)
    assert "ok goal g1: valid and approved" in healthy.stdout
    missing = repo.harness("doctor", "--json", env=_without_secret(repo.env, tmp_path), check=3)
    findings = json.loads(missing.stdout)
    assert {"check": "secret", "status": "fail"}.items() <= findings[3].items()
    assert SECRET not in healthy.stdout + healthy.stderr + missing.stdout + missing.stderr
