"""Many runners, one remote: the remote's atomic fast-forward is the lease.

Before a goal is loaded its branch is brought to the remote's state. Every checkpoint is
pushed fast-forward-only; a rejected push means another runner moved the branch first, so
this runner drops its local commits (resets to the remote) and leaves the goal. No server
of our own is involved.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import Busy, InvalidInput
from harness.store.gitrepo import Repo, Worktree, run_git

if TYPE_CHECKING:
    from harness.store.gitpush import PushResult

LEASE_GRACE_S = 300


class LeaseLost(Busy):
    """Another runner advanced the goal branch first."""


def runner_id(repo: Repo) -> str:
    """This clone, as other clones see it in the ledger."""
    return f"{socket.gethostname()}:{repo.common_dir}"


@dataclass(frozen=True)
class Remote:
    repo: Repo
    name: str

    @classmethod
    def check(cls, repo: Repo, name: str) -> Remote:
        proc = run_git(["remote", "get-url", name], repo.root, check=False)
        if proc.returncode != 0:
            raise InvalidInput(
                f"--push: {name!r} is not a remote of {repo.root} (see `git remote -v`)"
            )
        return cls(repo, name)

    def tracking(self, branch: str) -> str:
        return f"refs/remotes/{self.name}/{branch}"

    def fetch(self, prefix: str) -> None:
        spec = f"+refs/heads/{prefix}*:refs/remotes/{self.name}/{prefix}*"
        run_git(["fetch", "-q", "--prune", self.name, spec], self.repo.root)

    def fetch_branch(self, branch: str) -> str | None:
        spec = f"+refs/heads/{branch}:{self.tracking(branch)}"
        proc = run_git(["fetch", "-q", self.name, spec], self.repo.root, check=False)
        if proc.returncode != 0:
            run_git(["update-ref", "-d", self.tracking(branch)], self.repo.root, check=False)
            return None
        return self.repo.rev_parse(self.tracking(branch))

    def push(self, branch: str) -> PushResult:
        """Fast-forward-only; not `ok` when the remote moved first (or the push failed)."""
        from harness.store.gitpush import push_branch  # GitPython: only when pushing

        result = push_branch(self.repo.root, self.name, branch)
        if result.ok:
            run_git(["update-ref", self.tracking(branch), f"refs/heads/{branch}"], self.repo.root)
        return result

    def sync(self, branch: str, worktree: Path) -> None:
        """Bring the local goal branch (and its worktree) to the remote's state.

        Ahead of the remote (results of a run that died before pushing): push them. Behind:
        fast-forward. Diverged: another runner won; drop the local commits.
        """
        remote = self.repo.rev_parse(self.tracking(branch))
        local = self.repo.rev_parse(f"refs/heads/{branch}")
        if remote is None or local == remote:
            return
        if local is None:
            run_git(["branch", "-q", branch, remote], self.repo.root)
            return
        if self.repo.is_ancestor(remote, local) and self.push(branch).ok:
            return
        self._reset(branch, worktree, remote)

    def publish(self, branch: str, worktree: Worktree) -> None:
        if self.push(branch).ok:
            return
        remote = self.fetch_branch(branch)
        if remote is not None:
            self._reset(branch, worktree.path, remote)
        raise LeaseLost(f"{branch}: another runner advanced the goal first; leaving it to them")

    def _reset(self, branch: str, worktree: Path, commit: str) -> None:
        if (worktree / ".git").exists():
            run_git(["reset", "-q", "--hard", commit], worktree)
            run_git(["clean", "-q", "-fd"], worktree)
        else:
            run_git(["branch", "-q", "-f", branch, commit], self.repo.root)
