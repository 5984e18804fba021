"""The repository secret: where it comes from, and the per-goal keys derived from it.

The secret never reaches the repository, the ledger, a log or a child process.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets as _random
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import TrustFailure

MIN_SECRET_BYTES = 32
ENV_SECRET = "HARNESS_SECRET"
ENV_SECRET_FILE = "HARNESS_SECRET_FILE"
# `harness run --jobs` hands its children the secret through a pipe: this names its fd.
ENV_SECRET_FD = "HARNESS_SECRET_FD"


def default_secret_file(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "goal-harness" / "secret"


@dataclass(frozen=True)
class Secret:
    """The repository secret. `repr` never shows the bytes."""

    value: bytes = b""
    origin: str = ""

    def __repr__(self) -> str:
        return f"Secret(origin={self.origin!r})"

    def goal_key(self, goal_id: str) -> bytes:
        """A key for one goal, so a MAC made for one goal is useless for another."""
        info = b"goal-harness v1 goal-key\x00" + goal_id.encode("utf-8")
        return hmac.new(self.value, info, hashlib.sha256).digest()

    def cache_key(self) -> bytes:
        """The key vouching for machine-local caches (harness/model/cache.py)."""
        return hmac.new(self.value, b"goal-harness v1 cache-key", hashlib.sha256).digest()


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _from_file(path: Path, repo_root: Path | None) -> Secret:
    if repo_root is not None and _inside(path, repo_root):
        raise TrustFailure(
            f"{path}: the secret file is inside the repository; "
            "move it outside (see `harness secret new --file`)"
        )
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TrustFailure(
            f"no secret: {path} does not exist; run `harness secret new` "
            f"or set {ENV_SECRET} / {ENV_SECRET_FILE}"
        ) from None
    except OSError as exc:
        raise TrustFailure(f"{path}: cannot read the secret: {exc.strerror}") from None
    return Secret(raw.strip(), str(path))


def make_undumpable() -> None:
    """Linux: keep processes of the same user (the agent) out of this one's memory and
    /proc/<pid>/environ, where HARNESS_SECRET would otherwise be readable."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError):
        return


_PR_SET_DUMPABLE = 4
# The variables the CLI takes out of its own environment first thing (take_from_environment).
HELD = (ENV_SECRET, ENV_SECRET_FILE, "HARNESS_KEY_PASSPHRASE", "HARNESS_RUNNER_KEY_FILE")


def take_from_environment(names: tuple[str, ...] = HELD) -> dict[str, str]:
    """The CLI's first act (harness.cli.main): hold `names` in memory only.

    Makes this process undumpable, removes the names from os.environ (and so from libc's
    environ: no child inherits them by default), and blanks each `NAME=value` entry in the
    start-up environment block, the bytes /proc/<pid>/environ shows for the process's whole
    life, which removing a variable from os.environ leaves as it was. What remains is the
    window from exec to this call (docs/guide/threat-model.md)."""
    make_undumpable()
    held = {name: os.environ.pop(name) for name in names if name in os.environ}
    if held:
        _blank_startup_environment(held)
    fd = os.environ.pop(ENV_SECRET_FD, None)
    if fd is not None and ENV_SECRET not in held:
        piped = _read_pipe(fd)
        if piped:
            held[ENV_SECRET] = piped
    return held


def _read_pipe(fd_text: str) -> str:
    """The secret a parent `harness run --jobs` wrote to the pipe `fd_text` names, or ""
    (then the secret is looked for as if none was handed over)."""
    try:
        fd = int(fd_text)
        if fd < 3 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return ""
        with os.fdopen(fd, "rb") as pipe:
            return pipe.read(64 * 1024).decode("utf-8", "replace")
    except (ValueError, OSError):
        return ""


def _blank_startup_environment(names: Iterable[str]) -> None:
    """Overwrite with NULs every entry of this process's start-up environment block named
    in `names`. Linux only; where /proc/self/stat does not name the block, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        line = Path("/proc/self/stat").read_text()
        # Fields 50 and 51 (1-based) are env_start and env_end; the list starts at field 3.
        fields = line[line.rindex(")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])
    except (OSError, ValueError, IndexError):
        return
    if not 0 < start < end:
        return
    import ctypes

    prefixes = tuple(os.fsencode(name) + b"=" for name in names)
    offset = 0
    for entry in ctypes.string_at(start, end - start).split(b"\0"):
        if entry.startswith(prefixes):
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


def load_secret(env: Mapping[str, str], repo_root: Path | None = None) -> Secret:
    """HARNESS_SECRET, else HARNESS_SECRET_FILE, else the default file. Refuses short ones.

    Whoever holds the secret is made undumpable first (see make_undumpable)."""
    make_undumpable()
    if env.get(ENV_SECRET):
        secret = Secret(env[ENV_SECRET].strip().encode("utf-8"), ENV_SECRET)
    elif env.get(ENV_SECRET_FILE):
        secret = _from_file(Path(env[ENV_SECRET_FILE]).expanduser(), repo_root)
    else:
        secret = _from_file(default_secret_file(env), repo_root)
    if len(secret.value) < MIN_SECRET_BYTES:
        raise TrustFailure(
            f"the secret from {secret.origin} is {len(secret.value)} bytes; at least "
            f"{MIN_SECRET_BYTES} are required (make one with `harness secret new`)"
        )
    return secret


def new_secret_text() -> str:
    return _random.token_hex(32)


def write_secret_file(path: Path, repo_root: Path | None) -> None:
    """Create a new secret file with mode 0600; never overwrite an existing one."""
    from harness.errors import InvalidInput

    if repo_root is not None and _inside(path, repo_root):
        raise InvalidInput(f"{path}: the secret file must be outside the repository")
    if path.exists():
        raise InvalidInput(f"{path}: a secret file already exists; remove it first to replace it")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(new_secret_text() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
