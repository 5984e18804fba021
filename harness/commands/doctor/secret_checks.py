"""Doctor's checks of the secret: where it comes from, and its file's mode."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.errors import TrustFailure
from harness.trust.secret import (
    ENV_SECRET,
    ENV_SECRET_FILE,
    Secret,
    default_secret_file,
    load_secret,
)


def secret_check(env: Mapping[str, str], root: Path | None) -> tuple[Secret | None, Finding]:
    try:
        secret = load_secret(env, root)
    except TrustFailure as exc:
        fix = (
            f"run `harness secret new` (writes {default_secret_file(env)}), or set "
            f"{ENV_SECRET_FILE} to a file outside the repository, or {ENV_SECRET} in CI"
        )
        return None, fail("secret", str(exc), fix, trust=True)
    return secret, Finding("secret", OK, f"{len(secret.value)} bytes from {secret.origin}")


def secret_file(env: Mapping[str, str]) -> Finding:
    named = env.get(ENV_SECRET_FILE)
    path = Path(named).expanduser() if named else default_secret_file(env)
    if not path.is_file():
        if env.get(ENV_SECRET):
            return Finding("secret-file", OK, f"none at {path}; the secret comes from {ENV_SECRET}")
        return Finding(
            "secret-file", WARN, f"{path} does not exist", f"`harness secret new --file {path}`"
        )
    mode = path.stat().st_mode & 0o777
    if mode & 0o066:
        return Finding(
            "secret-file",
            WARN,
            f"{path} is readable or writable by group or others (mode {mode:04o})",
            f"chmod 600 {path}",
        )
    return Finding("secret-file", OK, f"{path} (mode {mode:04o})")
