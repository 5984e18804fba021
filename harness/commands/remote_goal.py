"""Acting on a goal from any clone: its branch may exist only as the remote's.

A laptop clone made after a runner parked a goal has `refs/remotes/origin/harness/<id>` but
no local `harness/<id>`. Commands that only read the record (`status`, `replay`) and the
decisions (`ship`, `unpark`) look there too; with `--push REMOTE` the goal branch is
fetched from that remote first. See docs/specs/remote.md, "Acting from any clone".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TextIO, cast

from harness.commands.reviewer import remote_goal_branches, secret_here, vouch_record
from harness.commands.session import Session, open_session
from harness.errors import InvalidInput
from harness.loop.control import Control
from harness.record.hydrate import GoalPaths
from harness.record.ledger import Ledger
from harness.record.locate import locate
from harness.record.unverified import (
    MACS_UNCHECKED,
    UNVERIFIED,
    UnverifiedLedger,
    last_line_position,
)
from harness.record.visible import line
from harness.store.gitrepo import Repo, run_git
from harness.trust.secret import Secret

__all__ = [
    "UNVERIFIED",
    "UNVERIFIED_NOTE",
    "VERIFIED_NOTE",
    "goal_ledger",
    "goal_ref",
    "open_reading",
    "reading_ledger",
    "remote_goal_branches",
    "secret_here",
]


def open_reading(
    cwd: Path, env: Mapping[str, str], goal_ids: Sequence[str]
) -> AbstractContextManager[Session[Secret | None]]:
    """The session of a command that only reads records: with the secret when this machine
    has one (a wrong one is still exit 3), else without (then `secret` is None)."""
    if secret_here(env):
        # Session is invariant in its secret's type; one that has the secret is a reader too.
        return cast(
            "AbstractContextManager[Session[Secret | None]]", open_session(cwd, env, goal_ids)
        )
    return open_session(cwd, env, goal_ids, need_secret=False)


def reading_ledger(
    control: Control, paths: GoalPaths, secret: Secret | None, err: TextIO
) -> Ledger:
    """The goal's ledger, MACs checked with the secret. Without one, its head must be what
    a listed runner signed (reviewer.vouch_record: exit 3 otherwise), said on `err`, and
    every line's chain link is checked as it is read; where the owners list no runners it
    is read unverified and marked so (stdout stays exactly what the command prints)."""
    goal_id = paths.goal_id
    if secret is not None:
        return Ledger(paths.events, goal_id, secret.goal_key(goal_id))
    signed = vouch_record(control, paths, last_line_position(paths.events))
    if signed is None:
        err.write(line(f"harness: {goal_id}: unverified: {UNVERIFIED}"))
        return UnverifiedLedger(paths.events, goal_id)
    head = signed.checkpoint.head
    err.write(line(f"harness: {goal_id}: {signed.text} at event {head.seq}; {MACS_UNCHECKED}"))
    return UnverifiedLedger(paths.events, goal_id, head, signed.text, signed.checkpoint.tree)


@contextmanager
def goal_ledger(
    s: Session[Secret | None], goal_id: str, err: TextIO
) -> Iterator[tuple[Ledger, str | None]]:
    """The goal's ledger, found where record.locate looks (worktree, branch, the one
    remote's branch, a checkout folder) and read as `reading_ledger` reads it, and the
    remote branch it came from, if that was it: what replay, diff, trace and attest read."""
    remote_ref = goal_ref(s.repo, s.control, goal_id)
    with locate(s.repo, goal_id, s.control.branch(goal_id), remote_ref) as found:
        yield reading_ledger(s.control, found.paths, s.secret, err), remote_ref


VERIFIED_NOTE = "verified: every event's chain link and MAC checked while rendering"
UNVERIFIED_NOTE = f"unverified: {UNVERIFIED} (chain links checked, MACs not)"


def page_note(ledger: Ledger) -> str:
    """What a page rendered from `ledger` says of its checks (its banner's first words)."""
    if not isinstance(ledger, UnverifiedLedger):
        return VERIFIED_NOTE
    if ledger.signed is None:
        return UNVERIFIED_NOTE
    return (
        f"{ledger.signer} at event {ledger.signed.seq}: every chain link checked up to the "
        f"signed head ({MACS_UNCHECKED})"
    )


def goal_ref(repo: Repo, control: Control, goal_id: str, remote: str | None = None) -> str | None:
    """The ref holding the goal's record: the local branch, else the remote's.

    With `remote`, that remote's branch is fetched first and read (the runners that follow
    the remote act on its state); without, the one remote-tracking branch of that name, if exactly one remote
    has it (two remotes with different records would be a guess).
    """
    branch = control.branch(goal_id)
    local = f"refs/heads/{branch}"
    if remote is not None:
        tracking = f"refs/remotes/{remote}/{branch}"
        proc = run_git(["fetch", "-q", remote, f"+{local}:{tracking}"], repo.root, check=False)
        if proc.returncode == 0:
            return tracking  # the remote is what the runners that follow it act on
    if repo.rev_parse(local) is not None:
        return local
    out = run_git(
        ["for-each-ref", "--format=%(refname)", "refs/remotes/*/" + branch], repo.root
    ).stdout.decode()
    found = [line for line in out.splitlines() if line.endswith("/" + branch)]
    return found[0] if len(found) == 1 else None


def require_control_checked_out(repo: Repo, control: Control) -> None:
    """`--push` commits the decision on the control branch: it must be the checkout's."""
    if repo.checked_out_ref() != control.ref or not control.ref.startswith("refs/heads/"):
        raise InvalidInput(
            f"--push: the control branch {control.ref} is not checked out in {repo.root} "
            "(expected it checked out, so the decision can be committed on it)"
        )


def commit_decision(
    repo: Repo,
    control: Control,
    remote: str,
    path: Path,
    goal_id: str,
    decision: str,
    out: TextIO,
    also: Sequence[Path] = (),
) -> None:
    """`also`: files committed with the approval file (a ship decision's envelope)."""
    from harness.store.controlref import commit_and_push

    message = f"harness: {decision} {goal_id}"
    commit = commit_and_push(repo, remote, control.ref, path, message, also)
    branch = control.ref.removeprefix("refs/heads/")
    out.write(
        line(
            f"committed goals/{goal_id}.approval ({commit[:12]}) and pushed {branch} to {remote}; "
            f"the next `harness run --push {remote}` acts on it"
        )
    )
