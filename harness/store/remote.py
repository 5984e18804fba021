"""Many runners, one remote: the remote's atomic fast-forward is the lease.

Before a goal is loaded its branch is brought to the remote's state. Every checkpoint is
pushed fast-forward-only. A push that fails is told apart by fetching again: only a remote
branch that moved past ours means another runner won, so this runner drops its local commits
(resets to the remote) and leaves the goal. A remote that refused for another reason (a
hook, a quota) or could not be reached keeps the local result: the goal stops with the
remote's message and the next run pushes it. No server of our own is involved.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import Busy, HarnessError, InvalidInput, TrustFailure
from harness.store.gitrepo import GitError, Repo, run_git
from harness.store.worktree import Worktree

if TYPE_CHECKING:
    from harness.store.catfile import ObjectReader
    from harness.store.gitpush import PushResult

LEASE_GRACE_S = 300


class LeaseLost(Busy):
    """Another runner advanced the goal branch first."""


class RemoteUnreachable(HarnessError):
    """The remote could not be read: no goal is advanced (exit 4, try again later)."""

    exit_code = 4


class PushRefused(HarnessError):
    """The remote did not take the push and did not move: nothing local is dropped (exit 4,
    as busy: the goal is not advanced now and the next run tries again)."""

    exit_code = 4


def runner_id(repo: Repo) -> str:
    """This clone, as other clones see it in the ledger."""
    return f"{socket.gethostname()}:{repo.common_dir}"


@dataclass(frozen=True)
class Remote:
    repo: Repo
    name: str
    # Remote goal branches this run's fetch saw move other than forward: branch -> (was, is).
    rewound: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False)
    # The branches on which this run lost a race: once one is lost, other runners are at
    # work, and each goal's branch is fetched again right before it is synced (remote.md).
    lost: set[str] = field(default_factory=set, compare=False)
    # The branches fetched again this run (`refresh`): once a goal, whether the run's
    # catch-up or its sync asks first.
    refreshed: set[str] = field(default_factory=set, compare=False)

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
        seen = self._tracked(prefix)
        try:
            self._fetch_all(spec)
        except GitError as exc:
            raise RemoteUnreachable(
                f"--push {self.name}: cannot fetch the goal branches from the remote: {exc}; "
                "nothing was run"
            ) from None
        now = self._tracked(prefix)
        for branch, before in seen.items():
            self._check_forward(branch, before, now.get(branch))

    def _fetch_all(self, spec: str) -> None:
        """`git fetch --prune`, tried again when it failed only because another runner of
        this clone was updating one of the same refs (git: "cannot lock ref")."""
        for attempt in range(4):
            try:
                run_git(["fetch", "-q", "--prune", self.name, spec], self.repo.root)
                return
            except GitError as exc:
                if attempt == 3 or "cannot lock ref" not in str(exc):
                    raise
                time.sleep(0.1 * 2**attempt)  # 0.7 s in all: another fetch takes ~0.1 s

    def _check_forward(self, branch: str, before: str | None, after: str | None) -> None:
        if before is None or after is None or after == before:
            return
        if not self.repo.is_ancestor(before, after):
            self.rewound[branch] = (before, after)
            # Kept as last seen, so every later run refuses too until a human acts.
            run_git(["update-ref", self.tracking(branch), before], self.repo.root)

    def refresh(self, branch: str) -> None:
        """After a lost race in this run, the goal's branch fetched again (checked, like the
        run's first fetch, to have moved only forward): the first fetch is as old as the
        run, and racing on what it saw loses again. A fetch that fails leaves what was seen.
        Once a goal a run: the catch-up that found nothing to answer and the sync after it
        look at the same visit."""
        if not self.lost or branch in self.rewound or branch in self.refreshed:
            return
        self.refreshed.add(branch)
        before = self.repo.rev_parse(self.tracking(branch))
        spec = f"+refs/heads/{branch}:{self.tracking(branch)}"
        if run_git(["fetch", "-q", self.name, spec], self.repo.root, check=False).returncode:
            return
        self._check_forward(branch, before, self.repo.rev_parse(self.tracking(branch)))

    def _tracked(self, prefix: str) -> dict[str, str]:
        """What this clone last saw of each remote goal branch (its remote-tracking refs)."""
        out = run_git(
            [
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                f"refs/remotes/{self.name}/{prefix}",
            ],
            self.repo.root,
        ).stdout.decode()
        cut = len(f"refs/remotes/{self.name}/")
        return {ref[cut:]: sha for ref, _, sha in (x.partition(" ") for x in out.splitlines())}

    def in_step(self, branch: str, objects: ObjectReader) -> bool:
        """Whether the local goal branch is exactly where the remote's was last fetched
        (and did not go back): the sync would change nothing, so a finished or waiting goal
        may be answered for without loading it, as without `--push` (loop.md, step 1).
        Both refs are read through `objects` (a `cat-file --batch` reads refs afresh at each
        request): no git process."""
        if branch in self.rewound:
            return False
        ours = objects.commit_id(f"refs/heads/{branch}")
        return ours is not None and ours == objects.commit_id(self.tracking(branch))

    def catch_up(self, branch: str, worktree: Path, ours: str | None, theirs: str) -> bool:
        """The local branch brought from `ours` (None: absent) to `theirs`, the remote's
        commit it descends from, as `sync` brings a branch that is behind: a worktree this
        clone has is reset to it; a branch with none is moved only if it is still at `ours`
        (git's compare-and-swap). False when that failed or git could not do it."""
        try:
            if (worktree / ".git").exists():
                self._reset(branch, worktree, theirs)
                return True
        except GitError:
            return False
        old = ours if ours is not None else "0" * len(theirs)
        update = ["update-ref", f"refs/heads/{branch}", theirs, old]
        return run_git(update, self.repo.root, check=False).returncode == 0

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
        self.refresh(branch)
        if branch in self.rewound:
            before, after = self.rewound[branch]
            raise TrustFailure(
                f"{branch}: the remote's branch went back from {before[:12]} to {after[:12]}, "
                "which no runner does (runners only fast-forward): a rollback or a rewrite of "
                "the goal's record; nothing was run; restore it with a fast-forward push from a "
                "clone that has the full history, or investigate"
            )
        remote = self.repo.rev_parse(self.tracking(branch))
        local = self.repo.rev_parse(f"refs/heads/{branch}")
        if remote is None or local == remote:
            return
        if local is None:
            run_git(["branch", "-q", branch, remote], self.repo.root)
            return
        if not self.repo.is_ancestor(remote, local):
            self._reset(branch, worktree, remote)  # behind, or another runner won: theirs
            return
        moved = self._push_or_refused(branch, local)
        if moved is not None:
            self._reset(branch, worktree, moved)

    def publish(self, branch: str, worktree: Worktree) -> None:
        moved = self._push_or_refused(branch, worktree.head())
        if moved is not None:
            self._reset(branch, worktree.path, moved)
            self.lost.add(branch)
            raise LeaseLost(f"{branch}: another runner advanced the goal first; leaving it to them")

    def fence(
        self, branch: str, worktree: Worktree, started: str, what: str, lease_until: str
    ) -> None:
        """Passed by a step's result before anything of it is written: when the remote's
        branch moved on from `started` (the step's pushed start), another runner took the
        step (this one was stopped past its lease, or the clocks disagree). The local branch
        and worktree then go to the remote's commit and LeaseLost is raised. A remote that
        cannot be read now lets it pass: the push after the step is then the fence. `branch`
        is the goal's (not whatever the step left checked out in the worktree)."""
        theirs = self.fetch_branch(branch)
        if theirs is None or theirs == started or self.repo.is_ancestor(theirs, started):
            return
        self._reset(branch, worktree.path, theirs)
        self.lost.add(branch)
        raise LeaseLost(
            f"{what} ended after another runner took it over (its lease ran until "
            f"{lease_until}; the remote's branch is at {theirs[:12]}); its result is "
            "discarded and nothing of it was recorded"
        )

    def _push_or_refused(self, branch: str, local: str | None) -> str | None:
        """Push; None when it went. When it did not: the remote's commit if the branch moved
        there past `local` (a lost race), else PushRefused with the remote's own answer."""
        result = self.push(branch)
        if result.ok:
            return None
        remote = self.fetch_branch(branch)
        if remote is not None and local is not None and not self.repo.is_ancestor(remote, local):
            return remote
        raise PushRefused(
            f"{branch}: the push to {self.name!r} failed and the remote did not move: "
            f"{result.reason or 'no reason given'}; the results stay on the local branch and "
            "the next `harness run --push` pushes them"
        )

    def _reset(self, branch: str, worktree: Path, commit: str) -> None:
        """`branch` (and the goal's worktree, when this clone has one) moved to `commit`. A
        worktree that is on another branch is refused before anything moves: a reset there
        would move that branch instead (a step or a leftover process can check one out)."""
        from harness.store.worktree import checked_worktree

        if checked_worktree(worktree, branch) is not None:
            run_git(["reset", "-q", "--hard", commit], worktree)
            run_git(["clean", "-q", "-fd"], worktree)
        else:
            run_git(["branch", "-q", "-f", branch, commit], self.repo.root)
