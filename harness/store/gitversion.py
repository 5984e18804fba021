"""Which git is installed, and the fsync options chosen by its version (loop.md, "fsync")."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping

# core.fsync arrived in git 2.36 (objects and refs reach the disk before git reports
# success, so a power cut cannot leave a goal branch naming an empty commit, issue 14).
FSYNC_SINCE = (2, 36)
_GIT_VERSION = re.compile(r"git version (\d+)\.(\d+)")


def git_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from `git version` output (`git version 2.39.5`, `… .windows.1`)."""
    match = _GIT_VERSION.match(text.strip())
    return (int(match[1]), int(match[2])) if match else None


def fsync_config(version: tuple[int, int] | None) -> tuple[str, ...]:
    """The fsync options for this git: `core.fsync=committed` from 2.36; before it
    `core.fsyncObjectFiles=true`, which older git knows (newer git warns about it on every
    call, so it is never passed there), and the harness fsyncs the refs itself
    (`needs_ref_fsync`). An unreadable version is taken as new: the key is then ignored."""
    if version is None or version >= FSYNC_SINCE:
        return ("-c", "core.fsync=committed")
    return ("-c", "core.fsyncObjectFiles=true")


def needs_ref_fsync(version: tuple[int, int] | None) -> bool:
    """Whether git itself leaves the refs it writes unsynced (before core.fsync)."""
    return version is not None and version < FSYNC_SINCE


def installed_version(env: Mapping[str, str]) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            ["git", "version"], env=env, capture_output=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return git_version(out.decode("utf-8", "replace"))
