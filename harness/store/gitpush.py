"""`git push` through GitPython, which reads the remote's answer for the ref (PushInfo).

GitPython starts git with a copy of os.environ that it can only add to
(gitpython-developers/GitPython#924): the harness's secret and any GIT_DIR would reach
git. Its git processes are therefore started by `gitrepo.start_git`, with the clean
environment and safe options every harness git call gets. Importing GitPython costs
~70 ms, so only a push imports this module (see `remote.Remote.push`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.store.gitenv import environ_without_secrets, git_timeout_s
from harness.store.gitrepo import GitError, run_git, start_git

# Importing GitPython runs `git version` with os.environ as it is, secret included.
with environ_without_secrets():
    import git

# GitPython logs a warning when a rejected push also wrote to stderr; with no handler of
# ours, Python's last-resort handler would print it among the harness's own output.
logging.getLogger("git").addHandler(logging.NullHandler())
REMOTE_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class PushResult:
    ok: bool  # git pushed the ref (exit 0)
    rejected: bool  # refused as not a fast-forward: the remote's branch moved first
    reason: str  # the remote's answer (`[rejected] (fetch first)`), or git's last error line


class _CleanGit(git.Git):
    """GitPython's command runner, with every process started by `start_git`."""

    def execute(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        # A push is the one command run through GitPython, and it streams (as_process).
        if args or not kwargs.get("as_process"):
            raise GitError(f"{command!r}: only streaming git commands run through GitPython")
        # command[0] is GitPython's executable; start_git runs `git` from PATH, as run_git.
        text = bool(kwargs.get("universal_newlines"))
        proc = start_git(command[1:], Path(self.working_dir or "."), text=text)
        return self.AutoInterrupt(proc, command)

    @property
    def version_info(self) -> tuple[int, ...]:
        # GitPython asks before adding --progress, which reading the remote's lines needs.
        words = run_git(["version"], Path(self.working_dir or ".")).stdout.split()
        return tuple(int(n) for n in words[2].decode().split(".")[:3] if n.isdigit())


class _Repo(git.Repo):
    GitCommandWrapperType = _CleanGit


def push_branch(root: Path, remote: str, branch: str) -> PushResult:
    """Push `refs/heads/<branch>` to the same name on `remote`; never forced."""
    refspec = f"refs/heads/{branch}:refs/heads/{branch}"
    progress = git.RemoteProgress()
    try:
        infos = git.Remote(_Repo(root), remote).push(
            refspec, progress=progress, kill_after_timeout=git_timeout_s()
        )
    except git.GitCommandError as exc:  # git failed before answering for the ref
        if "kill_after_timeout" in str(exc.stderr):  # GitPython ended it: a hung hook or remote
            return PushResult(False, False, f"git push did not finish in {git_timeout_s():g}s")
        return PushResult(False, False, _last_line(exc.stderr))
    rejected = any(info.flags & git.PushInfo.REJECTED for info in infos)
    summary = next((info.summary.strip() for info in infos), "")
    if infos.error is None:
        return PushResult(True, False, summary)
    failed = [info.summary.strip() for info in infos if info.flags & git.PushInfo.ERROR]
    reason = failed[0] if failed else summary or _last_line(getattr(infos.error, "stderr", ""))
    return PushResult(False, rejected, _with_remote_says(reason, progress.other_lines))


def _with_remote_says(reason: str, lines: list[str]) -> str:
    """The remote's own words (a hook's `remote: …` lines), printable and bounded, after
    git's summary: a quota or branch rule says there what to do."""
    said = [line.removeprefix("remote:").strip() for line in lines if line.startswith("remote:")]
    said = [line for line in said if line]
    if not said:
        return reason
    text = "; ".join(said)[:REMOTE_MESSAGE_CHARS]
    return f"{reason}: the remote says: " + "".join(c if c.isprintable() else "?" for c in text)


def _last_line(stderr: object) -> str:
    """git's last line of error, out of GitPython's `\n  stderr: '…'` wrapping."""
    text = str(stderr).strip().removeprefix("stderr: '").removesuffix("'")
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""
