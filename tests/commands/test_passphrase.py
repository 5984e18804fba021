"""Where `harness approve` gets a key's passphrase: HARNESS_KEY_PASSPHRASE, else a prompt
on the terminal (a real pseudo-terminal here), else a one-line refusal."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.managed import OWNER, ManagedFactory, ManagedRepo, git

PASSPHRASE = "sesame"


def _locked_repo(managed: ManagedFactory, tmp_path: Path) -> tuple[ManagedRepo, Path]:
    """A repository whose owner key has a passphrase, with the goal not yet approved."""
    repo = managed(approve=False)
    key = tmp_path / "locked"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-C", OWNER, "-f", str(key)],
        check=True,
        capture_output=True,
    )
    public = Path(f"{key}.pub").read_text().split()
    (repo.root / ".harness" / "owners").write_text(f"{OWNER} {public[0]} {public[1]}\n")
    git(repo.root, "commit", "-qam", "locked owner key")
    return repo, key


def _env(repo: ManagedRepo) -> dict[str, str]:
    return {k: v for k, v in repo.env.items() if k != "HARNESS_KEY_PASSPHRASE"}


def _approve(repo: ManagedRepo, key: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "approve", "g1", "--key", str(key)],
        cwd=repo.root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_a_terminal_or_variable_approve_refuses(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo, key = _locked_repo(managed, tmp_path)
    proc = _approve(repo, key, _env(repo))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"harness: {key}: private key is encrypted (expected its passphrase in "
        "HARNESS_KEY_PASSPHRASE, or typed at a terminal)\n"
    )
    assert not (repo.root / "goals" / "g1.approval").exists()


def test_the_variable_gives_the_passphrase(managed: ManagedFactory, tmp_path: Path) -> None:
    repo, key = _locked_repo(managed, tmp_path)
    proc = _approve(repo, key, _env(repo) | {"HARNESS_KEY_PASSPHRASE": PASSPHRASE})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("approved goals/g1.yaml")


def _controlling_terminal() -> None:
    # In the child: a new session whose controlling terminal is the pty on stdin, as a
    # login shell has; getpass reads /dev/tty.
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read_until(fd: int, wanted: bytes, seconds: float = 60.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.parametrize(("typed", "code"), [(PASSPHRASE, 0), ("wrong", 2), ("", 2)])
def test_on_a_terminal_approve_asks(
    managed: ManagedFactory, tmp_path: Path, typed: str, code: int
) -> None:
    repo, key = _locked_repo(managed, tmp_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "approve", "g1", "--key", str(key)],
        cwd=repo.root,
        env=_env(repo),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=_controlling_terminal,
    )
    os.close(slave)
    try:
        prompt = _read_until(master, b"passphrase for the private key: ")
        assert b"passphrase for the private key: " in prompt, prompt
        os.write(master, typed.encode() + b"\n")
        rest = _read_until(master, b"\n\n--never--", seconds=30)
        assert proc.wait(timeout=60) == code, rest
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert PASSPHRASE.encode() not in rest  # getpass does not echo it
    approved = (repo.root / "goals" / "g1.approval").exists()
    assert approved == (code == 0)
    if code == 0:
        assert b"approved goals/g1.yaml" in rest
