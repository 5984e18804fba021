"""A runner's own SSH signing key: what signs its checkpoints (`checkpoint.py`).

Kept beside the secret (`~/.config/goal-harness/runner-key`, or the file
`HARNESS_RUNNER_KEY_FILE` names), never in a repository, hidden from every contained step
like the secret's folder. Its public half is listed by the owners in `.harness/runners`
(`runners.py`), so a clone without the secret can tell the runner's record from a forgery.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import InvalidInput, TrustFailure
from harness.store.fsutil import atomic_write
from harness.trust.secret import default_secret_file
from harness.trust.sshsig import load_private_key, private_key_public_blob, sign_with
from harness.trust.sshwire import public_key_line

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ENV_RUNNER_KEY_FILE = "HARNESS_RUNNER_KEY_FILE"


def fingerprint(key_blob: bytes) -> str:
    """The key's fingerprint as `ssh-keygen -l` prints it: `SHA256:<base64, no padding>`."""
    digest = hashlib.sha256(key_blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def runner_key_file(env: Mapping[str, str]) -> Path:
    named = env.get(ENV_RUNNER_KEY_FILE)
    if named:
        return Path(named).expanduser()
    return default_secret_file(env).parent / "runner-key"


@dataclass
class RunnerKey:
    """This machine's runner key: its public blob read from the file's clear header; the
    private key is decrypted (and cryptography imported) at the first signature only."""

    path: Path
    public_blob: bytes
    _private: Ed25519PrivateKey | None = field(default=None, repr=False)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_blob)

    @property
    def public_line(self) -> str:
        return public_key_line(self.public_blob)

    def private_key(self) -> Ed25519PrivateKey:
        """The private key, decrypted (and cryptography imported) at its first use."""
        if self._private is None:
            self._private = load_private_key(self.path)
        return self._private

    def sign(self, message: bytes, namespace: str) -> str:
        return sign_with(self.private_key(), message, namespace)


def load_runner_key(env: Mapping[str, str]) -> RunnerKey | None:
    """This machine's runner key, or None where it has none (no file at the default place,
    and HARNESS_RUNNER_KEY_FILE unset). A file named but missing or unreadable is exit 3."""
    path = runner_key_file(env)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if env.get(ENV_RUNNER_KEY_FILE):
            raise TrustFailure(
                f"{ENV_RUNNER_KEY_FILE}: {path} does not exist (expected this runner's "
                "key; `harness runner-key new` makes one)"
            ) from None
        return None
    except OSError as exc:
        raise TrustFailure(f"{path}: cannot read the runner key: {exc.strerror}") from None
    try:
        return RunnerKey(path, private_key_public_blob(data, str(path)))
    except InvalidInput as exc:
        raise TrustFailure(f"{exc} (the runner key)") from None


def new_runner_key(path: Path, repo_root: Path | None) -> RunnerKey:
    """A new ed25519 key at `path` (mode 0600) and its `.pub` beside it; an existing key is
    never replaced (the owners list it: a new one would stop this runner)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    if repo_root is not None and path.resolve().is_relative_to(repo_root.resolve()):
        raise InvalidInput(
            f"{path}: inside the repository (expected a path outside it, beside the secret)"
        )
    if path.exists():
        raise InvalidInput(
            f"{path}: a runner key is already there (expected no file; the owners list "
            "the key it holds, so it is kept: remove it by hand to replace it)"
        )
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption())
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, private, mode=0o600)
    atomic_write(path.with_name(path.name + ".pub"), public + b"\n")
    loaded = load_runner_key({ENV_RUNNER_KEY_FILE: str(path)})
    assert loaded is not None
    return loaded
