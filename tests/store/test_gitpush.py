"""remote: pushes through GitPython on real repositories, with the harness's git environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.store.gitrepo import Repo
from harness.store.remote import Remote


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(cwd: Path, message: str) -> str:
    git(cwd, "-c", "user.name=T", "-c", "user.email=t@example.com",
        "commit", "-q", "--allow-empty", "-m", message)  # fmt: skip
    return git(cwd, "rev-parse", "HEAD")


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of one bare remote, both at the remote's one commit on harness/g1."""
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "harness/g1")
    commit(seed, "one")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "remote.git")
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", "remote.git", name)
    return tmp_path / "a", tmp_path / "b"


def test_a_push_moves_the_remote_and_its_tracking_ref(clones: tuple[Path, Path]) -> None:
    a, _ = clones
    head = commit(a, "two")
    result = Remote(Repo.discover(a), "origin").push("harness/g1")
    assert result.ok and not result.rejected
    assert result.reason.endswith(f"..{head[:7]}")
    assert git(a, "rev-parse", "refs/remotes/origin/harness/g1") == head


def test_a_push_after_another_runner_is_rejected_with_the_remote_reason(
    clones: tuple[Path, Path],
) -> None:
    a, b = clones
    commit(b, "b wins")
    assert Remote(Repo.discover(b), "origin").push("harness/g1").ok
    before = git(a, "rev-parse", "refs/remotes/origin/harness/g1")
    commit(a, "a loses")
    result = Remote(Repo.discover(a), "origin").push("harness/g1")
    assert (result.ok, result.rejected, result.reason) == (False, True, "[rejected] (fetch first)")
    assert git(a, "rev-parse", "refs/remotes/origin/harness/g1") == before


def test_a_push_that_fails_otherwise_is_not_a_rejection(clones: tuple[Path, Path]) -> None:
    a, _ = clones
    git(a, "remote", "set-url", "origin", str(a.parent / "gone.git"))
    commit(a, "two")
    result = Remote(Repo.discover(a), "origin").push("harness/g1")
    assert (result.ok, result.rejected) == (False, False)
    assert result.reason.startswith("fatal: ")


def test_a_push_gets_the_clean_git_environment(
    clones: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitPython would copy os.environ: the secret must not reach git, nor GIT_DIR, nor hooks."""
    a, _ = clones
    record = a.parent / "receive-pack.env"
    recorder = a.parent / "record-receive-pack"
    recorder.write_text(f'#!/bin/sh\nenv > "{record}"\nexec git-receive-pack "$@"\n')
    recorder.chmod(0o755)
    git(a, "config", "remote.origin.receivepack", str(recorder))
    hooked = a.parent / "pre-push-ran"
    hook = a / ".git" / "hooks" / "pre-push"
    hook.write_text(f'#!/bin/sh\ntouch "{hooked}"\nexit 1\n')
    hook.chmod(0o755)
    head = commit(a, "two")
    leaks = {
        "HARNESS_SECRET": "leaked-secret-0123456789abcdef0123456789",
        "HARNESS_SECRET_FILE": "/leaked/secret",
        "HARNESS_KEY_PASSPHRASE": "leaked-passphrase",
        "GIT_DIR": str(a.parent / "elsewhere"),
        "GIT_INDEX_FILE": str(a.parent / "elsewhere-index"),
        "LC_ALL": "fr_FR.UTF-8",
        "GIT_TERMINAL_PROMPT": "1",
    }
    with monkeypatch.context() as patched:
        for name, value in leaks.items():
            patched.setenv(name, value)
        result = Remote(Repo.discover(a), "origin").push("harness/g1")
    assert result.ok, result.reason  # with GIT_DIR passed on, git would look elsewhere
    assert git(a.parent / "remote.git", "rev-parse", "harness/g1") == head
    env = dict(line.split("=", 1) for line in record.read_text().splitlines() if "=" in line)
    assert not {"HARNESS_SECRET", "HARNESS_SECRET_FILE", "HARNESS_KEY_PASSPHRASE"} & env.keys()
    assert leaks["HARNESS_SECRET"] not in record.read_text()
    assert "GIT_INDEX_FILE" not in env
    assert (env["LC_ALL"], env["GIT_TERMINAL_PROMPT"]) == ("C", "0")
    assert not hooked.exists()  # run_git's `-c core.hooksPath=/dev/null` reached the push


def test_gitpython_is_imported_only_to_push() -> None:
    """Importing `git` costs ~70 ms: no command's module (nor the remote) imports it."""
    modules = [
        "harness.cli",
        "harness.commands.run",
        "harness.commands.status",
        "harness.commands.verify",
        "harness.commands.replay",
        "harness.store.remote",
        "harness.loop.advance",
    ]
    code = f"import sys; import {', '.join(modules)}; print('git' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_importing_gitpython_runs_no_git_with_the_secret(tmp_path: Path) -> None:
    """GitPython runs `git version` when imported, from os.environ as it is."""
    log = tmp_path / "git-env.log"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    wrapper.write_text(f'#!/bin/sh\nenv >> "{log}"\nexec {real.stdout.strip()} "$@"\n')
    wrapper.chmod(0o755)
    code = "import harness.store.gitpush, os; assert os.environ['HARNESS_SECRET'] == 's' * 40"
    env = {
        "PATH": f"{wrapper.parent}:/usr/bin:/bin",
        "HARNESS_SECRET": "s" * 40,
        "HARNESS_KEY_PASSPHRASE": "pass-phrase",
        "GIT_DIR": str(tmp_path),
    }
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    seen = log.read_text()
    assert "PATH=" in seen  # the wrapper ran: GitPython did start git
    for name in ("HARNESS_SECRET", "HARNESS_KEY_PASSPHRASE", "GIT_DIR"):
        assert f"{name}=" not in seen
