"""Keys made by real ssh-keygen, and sample statements, for the approval tests."""

from __future__ import annotations

import base64
import hashlib
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.trust.statement import Statement

SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
OWNERS = ".harness/owners"
GOAL = "fix-login"
SHA = hashlib.sha256(b"goal file v2").hexdigest()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LEDGER = f"12:{'ab' * 32}"
# A fixed real ed25519 public key and an ecdsa one, for tables that need no private key.
ED_B64 = "AAAAC3NzaC1lZDI1NTE5AAAAIG1mhH6c2ptlYmGLqg06RPIF08hz3cyrBnMvVX2IYOh/"
ECDSA_B64 = (
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBN2XbzJ1ymXXQg0hD0wJhTB/fFfRg+jDqI/"
    "YhlyF+5U0IlDQoMXxn6SAdIikRQxVDM0BidiOucm4gSjc30vpRaY="
)
NOT_VERIFIED = "signature: does not verify: the signed text or the signature was changed"


def wire(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def ssh_keygen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SSH_KEYGEN, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


@dataclass(frozen=True)
class Key:
    path: Path
    blob: bytes

    @property
    def pub(self) -> str:
        return Path(f"{self.path}.pub").read_text()


def make_key(folder: Path, name: str, *options: str) -> Key:
    path = folder / name
    done = ssh_keygen("-q", "-C", "test", "-f", str(path), *options)
    assert done.returncode == 0, done.stderr
    pub = Path(f"{path}.pub").read_text()
    blob = base64.b64decode(pub.split()[1])
    return Key(path, blob)


RUN = Statement(GOAL, SHA, "run")
SHIP = Statement(GOAL, SHA, "ship", COMMIT, LEDGER)
