"""Doctor's checks of the secret: where it comes from, and its file's mode."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.commands.reviewer import COPY_ADVICE, recorded_goals, secret_here
from harness.errors import TrustFailure
from harness.store.gitrepo import Repo
from harness.trust.secret import (
    ENV_SECRET,
    ENV_SECRET_FILE,
    Secret,
    default_secret_file,
    load_secret,
)


def reviewer_clone(env: Mapping[str, str], repo: Repo | None) -> list[str]:
    """The goals with records here when this is a reviewer clone (no secret set up, records
    made elsewhere), else []."""
    if repo is None or secret_here(env):
        return []
    return recorded_goals(repo)


def secret_check(
    env: Mapping[str, str], repo: Repo | None, reviewed: list[str]
) -> tuple[Secret | None, Finding]:
    if reviewed:
        shown = ", ".join(reviewed[:5]) + (" …" if len(reviewed) > 5 else "")
        finding = (
            f"none here: a reviewer clone (records of {shown} were made by a runner with its "
            "own secret); status, replay, report, diff and verify work here, unverified"
        )
        return None, Finding("secret", WARN, finding, COPY_ADVICE)
    try:
        secret = load_secret(env, repo.root if repo is not None else None)
    except TrustFailure as exc:
        fix = (
            f"run `harness secret new` (writes {default_secret_file(env)}), or set "
            f"{ENV_SECRET_FILE} to a file outside the repository, or {ENV_SECRET} in CI"
        )
        return None, fail("secret", str(exc), fix, trust=True)
    return secret, Finding("secret", OK, f"{len(secret.value)} bytes from {secret.origin}")


def secret_file(env: Mapping[str, str], reviewed: list[str]) -> Finding:
    named = env.get(ENV_SECRET_FILE)
    path = Path(named).expanduser() if named else default_secret_file(env)
    if not path.is_file():
        if reviewed:
            return Finding("secret-file", OK, f"none at {path} (a reviewer clone needs none)")
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
