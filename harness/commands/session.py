"""What most commands open first: the repository, the secret and the control ref.

The checks run in a fixed order, so a command fails at the first problem: each goal id
named on the command line (before any path is made from it), then the repository, then
the secret, then the control ref. The control's `cat-file` process ends with the session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from harness.commands.reviewer import reviewer_refusal
from harness.errors import TrustFailure
from harness.loop.control import Control, open_control
from harness.model.goalid import check_goal_id
from harness.store.gitrepo import Repo
from harness.trust.secret import Secret, load_secret

S = TypeVar("S", bound=Secret | None)


@dataclass(frozen=True)
class Session(Generic[S]):
    repo: Repo
    secret: S  # a Secret, or None when it was only looked for and there is none
    control: Control


@overload
def open_session(
    cwd: Path, env: Mapping[str, str], goal_ids: Sequence[str], need_secret: Literal[True] = ...
) -> AbstractContextManager[Session[Secret]]: ...


@overload
def open_session(
    cwd: Path, env: Mapping[str, str], goal_ids: Sequence[str], need_secret: Literal[False]
) -> AbstractContextManager[Session[Secret | None]]: ...


def open_session(
    cwd: Path, env: Mapping[str, str], goal_ids: Sequence[str], need_secret: bool = True
) -> AbstractContextManager[Session[Any]]:
    """The session, or the first problem raised: a bad goal id, no repository, no secret.

    With `need_secret`, a missing secret is a TrustFailure raised before the control ref is
    read, and the control uses the machine's config cache (the secret vouches for it).
    Without, the control ref is read first and without the cache, and a missing secret is
    None: a signed decision needs no secret, only acting on it at once does.
    """
    return _session(cwd, env, goal_ids, need_secret)


@contextmanager
def _session(
    cwd: Path, env: Mapping[str, str], goal_ids: Sequence[str], need_secret: bool
) -> Iterator[Session[Any]]:
    for goal_id in goal_ids:
        check_goal_id(goal_id, "goal id")
    repo = Repo.discover(cwd)
    if need_secret:
        secret: Secret | None = _secret_or_refusal(env, repo)
        control = open_control(repo, secret)
    else:
        control = open_control(repo)
        secret = _secret_if_any(env, repo)
    try:
        yield Session(repo, secret, control)
    finally:
        control.objects.close()


def nothing_notes(control: Control, found: bool, what: str) -> list[str]:
    """What a command that lists every goal says on stderr besides its own lines: the
    `goals/` entries never read as goals, and, when it found nothing, why. Where nothing
    could be checked at all (no owners file on the control ref) it raises: exit 2."""
    notes = control.stray_goal_notes()
    if found:
        return notes
    problem = control.not_managed()
    if problem is not None:
        raise problem
    short = control.ref.removeprefix("refs/heads/")
    empty = {
        "goals": f"no goals yet on {short} (`harness new <id>`, approve it, commit)",
        "records": "nothing to verify: no goal has records yet",
        "run": f"nothing to run: no goals on {short} (`harness new <id>`, approve it, commit)",
    }
    return [*notes, empty[what]]


def _secret_or_refusal(env: Mapping[str, str], repo: Repo) -> Secret:
    """The secret; where there is none in a reviewer clone, the refusal that says so (and
    never advises a new secret there, which would not be the runner's)."""
    try:
        return load_secret(env, repo.root)
    except TrustFailure:
        refusal = reviewer_refusal(repo, env, "this command")
        if refusal is not None:
            raise refusal from None
        raise


def _secret_if_any(env: Mapping[str, str], repo: Repo) -> Secret | None:
    try:
        return load_secret(env, repo.root)
    except TrustFailure:
        return None
