"""Where one goal's steps run: the paths a step sees, keeps or must not see (`Place`), the
goals' homes, and the config's `sandbox_binds` as mounted (docs/specs/sandbox.md, "What a
contained step sees", "Extra binds")."""

from __future__ import annotations

import functools
import hashlib
import os
import pwd
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import TrustFailure, invalid
from harness.model.config import Bind
from harness.store.gitrepo import Repo
from harness.trust.runnerkey import ENV_RUNNER_KEY_FILE
from harness.trust.secret import ENV_SECRET_FILE, default_secret_file

_PRIVATE = (".ssh", ".gnupg")  # in the runner's home: keys a step must never read


@dataclass(frozen=True)
class Place:
    """The paths one goal's step sees, keeps or must not see."""

    goal_id: str
    worktree: Path
    repo_root: Path  # the main checkout
    common_dir: Path  # the repository's .git
    worktrees: Path  # every goal's worktree is below this
    env: Mapping[str, str] = field(default_factory=dict)  # the runner's environment
    binds: tuple[Bind, ...] = ()  # the config's sandbox_binds

    @classmethod
    def of(cls, repo: Repo, goal_id: str, env: Mapping[str, str], binds: tuple[Bind, ...]) -> Place:
        worktree = repo.worktree_path(goal_id)
        return cls(goal_id, worktree, repo.root, repo.common_dir, worktree.parent, env, binds)

    # A read-only step's fresh, empty home (None: the goal's own, which only a build gets).
    own_home: Path | None = None

    def home(self) -> Path:
        """The goal's own home: outside every worktree, kept across its builds. A read-only
        step (plan, judge, review, ship, a lesson check) gets a fresh empty one instead, so
        nothing a build wrote in its home (a `usercustomize.py`, a `.gitconfig` naming
        hooks, an `.npmrc`) is obeyed by the steps that check or ship its work."""
        return self.own_home if self.own_home is not None else self.homes() / self.goal_id

    def homes(self) -> Path:
        return self._homes

    def hidden(self) -> list[Path]:
        return [path for path, _ in self._hidden]

    def hidden_named(self) -> list[tuple[Path, str]]:
        """What no step may see, each with what it is (for a refusal to say)."""
        return list(self._hidden)

    # Worked out once a Place (each step's contain() asks several times; a Place lives for
    # one step or one command, within which the runner's home and environment stay put).
    @functools.cached_property
    def _homes(self) -> Path:
        digest = hashlib.sha256(os.fsencode(self.common_dir.resolve())).hexdigest()[:16]
        return homes_root(self.env) / digest

    @functools.cached_property
    def _hidden(self) -> tuple[tuple[Path, str], ...]:
        homes = {_real_home(self.env), Path(pwd.getpwuid(os.getuid()).pw_dir)}
        named = [
            (self.common_dir / "harness", ".git/harness"),
            (self.worktrees, "the goals' worktrees"),
            (self.homes().parent, "the goals' homes"),
        ]
        named += [(home / name, f"~/{name}") for home in sorted(homes) for name in _PRIVATE]
        named.append((default_secret_file(self.env).parent, "the secret's folder"))
        for name in (ENV_SECRET_FILE, ENV_RUNNER_KEY_FILE):  # files named outside that folder
            if self.env.get(name):
                named.append((Path(self.env[name]).expanduser(), name))
        socket = self.env.get("SSH_AUTH_SOCK")
        if socket:
            named.append((Path(socket).parent, "the folder of SSH_AUTH_SOCK"))
        named.append((Path(f"/run/user/{os.getuid()}"), "the user's runtime folder"))
        return tuple(named)

    def hiding_the_repository(self) -> TrustFailure | None:
        """A hidden folder that holds the checkout or its .git would hide them from every
        step, and git would fail in each: the runner's setup, refused before the run."""
        for path, what in self.hidden_named():
            folder = path.resolve()
            for kept in dict.fromkeys([self.repo_root.resolve(), self.common_dir.resolve()]):
                if folder.is_dir() and kept.is_relative_to(folder):
                    return TrustFailure(
                        f"{kept} lies inside {folder} ({what}), which every contained step has "
                        f"hidden, so no step could see the repository; {_move(what, folder)}"
                    )
        return None

    def bound(self) -> list[Shown]:
        """Each of the config's `sandbox_binds` as the step sees it: a `~/` path is the
        runner's, seen at the same place in the goal's home. A bind that would show a hidden
        path or the repository is refused (exit 2) by name."""
        shown = []
        for index, bind in enumerate(self.binds):
            source, target = _source(bind, self.env), Path(bind.path)
            if bind.path.startswith("~/"):
                target = self.home() / bind.path[2:]
            self._check_bind(f"sandbox_binds[{index}]", str(bind), source)
            shown.append(Shown(source, target, bind.writable))
        return shown

    def _check_bind(self, key: str, text: str, source: Path) -> None:
        shown = source.resolve()
        for kept in (*self.hidden(), self.repo_root, self.common_dir):
            kept = kept.resolve()
            if shown.is_relative_to(kept) or kept.is_relative_to(shown):
                raise invalid(
                    ".harness/config.yaml",
                    key,
                    f"{text!r} would let a step see or write {kept}",
                    "a path outside the repository, ~/.ssh, ~/.gnupg and the secret's folder",
                )


def homes_root(env: Mapping[str, str]) -> Path:
    """Where every repository's per-goal homes are kept on this runner."""
    state = env.get("XDG_STATE_HOME") or str(_real_home(env) / ".local" / "state")
    return Path(state) / "goal-harness" / "homes"


@dataclass(frozen=True)
class Shown:
    """A `sandbox_binds` entry as mounted: the runner's path, where the step sees it, and
    whether the step may write it (`rw:`)."""

    source: Path
    target: Path
    writable: bool


def _move(what: str, folder: Path) -> str:
    if what == "the folder of SSH_AUTH_SOCK":
        return (
            "start the agent with a socket in a folder of its own "
            "(ssh-agent -a ~/.ssh/agent.sock), or move the repository out of it"
        )
    return f"move the repository out of {folder}"


def bind_sources(binds: Sequence[Bind], env: Mapping[str, str]) -> list[Path]:
    """Each `sandbox_binds` entry as the runner's path (a `~/` path in the runner's home)."""
    return [_source(bind, env) for bind in binds]


def _source(bind: Bind, env: Mapping[str, str]) -> Path:
    path = bind.path
    return _real_home(env) / path[2:] if path.startswith("~/") else Path(path)


def _real_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir).expanduser()
