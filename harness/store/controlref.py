"""Following the remote's control branch (goal files, approvals, owners, decisions).

A runner (`harness run --push REMOTE`) fetches the control branch before it reads it, and
advances its own copy fast-forward only: an owner's approval or ship decision pushed from a
laptop reaches the runner's next pass without anyone running `git pull` there. A human's
`harness ship|unpark --push REMOTE` commits the decision on the control branch and pushes it
(fast-forward only) for that pass to find.

Exit codes: a control branch that diverged from the remote's, or that is checked out with
local changes the fast-forward would overwrite, is a refusal (exit 3, nothing run); a remote
that cannot be read is exit 4 (try again later), as for the goal branches (remote.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.errors import InvalidInput, TrustFailure
from harness.store.gitrepo import GitError, Repo, run_git
from harness.store.remote import PushRefused, RemoteUnreachable


class ControlNotFollowed(TrustFailure):
    """The local control branch cannot be brought to the remote's fast-forward (exit 3)."""


def follow_control(repo: Repo, remote: str, ref: str) -> bool:
    """Fetch `ref` (a `refs/heads/…` branch) from `remote` and fast-forward the local branch
    to it. True when the local branch moved (the caller reads the control ref again).

    Missing on the remote, or the local branch already there or ahead (an owner's commit
    not pushed yet): nothing changes. Checked out in the main worktree: `git merge
    --ff-only`, which keeps uncommitted changes that the fast-forward does not touch and
    refuses (exit 3) when it would overwrite one. Anything else: a compare-and-swap of the
    ref alone.
    """
    if not ref.startswith("refs/heads/"):
        return False  # a detached HEAD or a tag: nothing a runner could fast-forward
    branch = ref.removeprefix("refs/heads/")
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        listed = run_git(["ls-remote", "-q", "--heads", remote, ref], repo.root).stdout
    except GitError as exc:
        raise RemoteUnreachable(
            f"--push {remote}: cannot read the control branch {branch} from the remote: "
            f"{exc}; nothing was run"
        ) from None
    if not listed.strip():
        return False  # the remote has no such branch: the local one is all there is
    try:
        run_git(["fetch", "-q", remote, f"+{ref}:{tracking}"], repo.root)
    except GitError as exc:
        raise RemoteUnreachable(
            f"--push {remote}: cannot fetch the control branch {branch}: {exc}; nothing was run"
        ) from None
    theirs = repo.rev_parse(tracking)
    ours = repo.rev_parse(ref)
    if theirs is None or ours == theirs:
        return False
    if ours is not None and repo.is_ancestor(theirs, ours):
        return False  # ahead: local commits not pushed yet; the runner reads them
    if ours is not None and not repo.is_ancestor(ours, theirs):
        raise ControlNotFollowed(
            f"{branch}: the control branch diverged from {remote}/{branch} (local "
            f"{ours[:12]}, remote {theirs[:12]}): a runner only fast-forwards it; nothing was "
            f"run; reconcile it by hand (`git pull --rebase {remote} {branch}` or reset to "
            f"{remote}/{branch})"
        )
    if repo.checked_out_ref() == ref:
        _fast_forward_checkout(repo.root, branch, remote, theirs)
    else:
        run_git(["update-ref", ref, theirs, ours or ""], repo.root)
    return True


def _fast_forward_checkout(root: Path, branch: str, remote: str, commit: str) -> None:
    proc = run_git(["merge", "--ff-only", "-q", commit], root, check=False)
    if proc.returncode != 0:
        raise ControlNotFollowed(
            f"{branch}: cannot fast-forward the checked-out control branch to "
            f"{remote}/{branch} ({commit[:12]}): {_last_line(proc.stderr)}; nothing was run; "
            "commit, stash or remove the local changes in the way"
        )


def commit_and_push(
    repo: Repo, remote: str, ref: str, path: Path, message: str, also: Sequence[Path] = ()
) -> str:
    """Commit `path` (and `also`) alone on the checked-out control branch and push it
    fast-forward only.

    Returns the commit. A push the remote does not take leaves the commit on the local
    branch and raises PushRefused (exit 4) saying so: `git push` it once the remote allows.
    """
    branch = ref.removeprefix("refs/heads/")
    relative = str(path.relative_to(repo.root))
    paths = [relative, *(str(p.relative_to(repo.root)) for p in also)]
    run_git(["add", "--", *paths], repo.root)
    proc = run_git(["commit", "-q", "-m", message, "--", *paths], repo.root, check=False)
    if proc.returncode != 0:
        raise InvalidInput(
            f"{relative}: git commit failed: {_last_line(proc.stderr)} (expected a git identity: "
            "`git config user.name` and `user.email`)"
        )
    commit = repo.rev_parse("HEAD") or ""
    from harness.store.gitpush import push_branch  # GitPython: only when pushing

    result = push_branch(repo.root, remote, branch)
    if not result.ok:
        raise PushRefused(
            f"{branch}: the push to {remote!r} failed: {result.reason or 'no reason given'}; "
            f"the decision is committed on the local branch ({commit[:12]}): push it with "
            f"`git push {remote} {branch}` (after `git pull --rebase` if the remote moved)"
        )
    run_git(["update-ref", f"refs/remotes/{remote}/{branch}", commit], repo.root, check=False)
    return commit


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    return next((line for line in reversed(lines) if line), "no reason given")
