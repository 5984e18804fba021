"""The environment and messages of git processes: what no git call may inherit (variables
that point git elsewhere, the harness's secrets), how long one may take, and how to read
git's own reason and the objects it names from its stderr (store/gitrepo.py runs them).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping

from harness.errors import HarnessError, InvalidInput

# Variables that would point git at another repository, index or object store.
GIT_LOCATING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


class GitError(HarnessError):
    """A git command failed; carries git's own message."""


NEVER_TO_GIT = ("HARNESS_SECRET", "HARNESS_SECRET_FILE", "HARNESS_KEY_PASSPHRASE")


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for name in (*GIT_LOCATING, *NEVER_TO_GIT):
        env.pop(name, None)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    # `refs/replace/*` would make git show one object for another: a build with the sandbox
    # off can write them, and the diff the owner reviews would not be the blob that ships.
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    return env


# What the ship step's own git (and any git a read-only step runs) must never obey: hooks
# and fsmonitor of the repository (a build with the sandbox off can write `.git/hooks`),
# replace refs, the `ext::` transport, and any home's configuration (`GIT_CONFIG_GLOBAL`:
# a build can write its home's `.gitconfig`). Given as command-line configuration through
# the environment, which outranks every file (threat-model.md, "What the agent wrote").
STEP_GIT_CONFIG = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("protocol.ext.allow", "never"),
    ("submodule.recurse", "false"),
)


def step_git_env() -> dict[str, str]:
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_NO_REPLACE_OBJECTS": "1"}
    env["GIT_CONFIG_COUNT"] = str(len(STEP_GIT_CONFIG))
    for index, (key, value) in enumerate(STEP_GIT_CONFIG):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


CLEAN_ENV = git_env()


def git_timeout_s() -> float:
    """How long one git call may take (`HARNESS_GIT_TIMEOUT`, seconds; default 600): a hook
    or a remote that hangs stops the run with a message instead of stalling it for ever."""
    raw = os.environ.get("HARNESS_GIT_TIMEOUT", "600")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise InvalidInput(f"HARNESS_GIT_TIMEOUT: {raw!r} (expected seconds, a number > 0)")
    return value


def git_reason(stderr: bytes | str) -> str:
    """git's own reason: its first `fatal:`/`error:` line (the last is often advice)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal: ", "error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    return lines[-1] if lines else ""


# git's words for an object it does not have (or cannot read) where a name said it would.
_LOST = re.compile(
    r"bad object|bad tree object|not a tree object|invalid object|missing object|"
    r"unable to read [0-9a-f]{7}|does not match index|is corrupt|nonexistent object|"
    r"not a valid old SHA1"
)
# What that means, and what to do without a remote (remote.md, "Objects pruned during a run").
PRUNED = (
    "git objects are missing: removed by a `git gc --prune=now` or `git prune` run beside "
    "the harness (objects not yet on a branch), or a damaged object store; a goal's worktree "
    "keeps its files: do not remove it; `harness run` writes again what they still hold and "
    "names what it cannot; `git fsck` lists what is lost"
)


def lost_objects(stderr: bytes | str) -> bool:
    """Whether git's message says an object it was pointed at is missing or unreadable."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    return _LOST.search(text) is not None


_OBJECT = re.compile(
    r"\b([0-9a-f]{40}(?:[0-9a-f]{24})?)\b|objects/([0-9a-f]{2})/([0-9a-f]{38}(?:[0-9a-f]{24})?)\b"
)


def named_objects(stderr: bytes | str) -> list[str]:
    """The object ids git's message names, as ids or as loose object file paths."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    return [m[1] or m[2] + m[3] for m in _OBJECT.finditer(text)]


@contextlib.contextmanager
def environ_without_secrets() -> Iterator[None]:
    """os.environ without the variables no git process may see, for code that starts git
    from os.environ itself (importing GitPython runs `git version`); put back after."""
    held = {
        name: os.environ.pop(name) for name in (*GIT_LOCATING, *NEVER_TO_GIT) if name in os.environ
    }
    try:
        yield
    finally:
        os.environ.update(held)
