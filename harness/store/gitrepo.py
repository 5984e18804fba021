"""Every git call the harness makes, with a clean environment.

The git CLI is used directly (not through a library) because each call is one short
process with no import cost on the `run` path; only a push goes through GitPython
(`gitpush`), for the remote's answer, and its processes are started here too
(`start_git`). Hooks and fsmonitor are disabled for the harness's own calls: the agent
can write `.git/hooks`, and a hook must never run with the harness's environment.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, InvalidInput, TrustFailure
from harness.store.catfile import (
    ObjectReader,
    forget_reader,
    worktree_reader,
)
from harness.store.gitenv import (
    CLEAN_ENV,
    PRUNED,
    git_reason,
    git_timeout_s,
    lost_objects,
    named_objects,
)
from harness.store.gitenv import GitError as GitError  # where every caller imports it from
from harness.store.gitversion import fsync_config, installed_version
from harness.store.lock import worktree_admin

# A loose object's file name below its two-digit folder (SHA-1 or SHA-256).
_OBJECT_NAME = re.compile(r"[0-9a-f]{38}|[0-9a-f]{62}")
# A branch HEAD as git writes it, for names of plain characters only (others ask git).
_PLAIN_HEAD = re.compile(r"ref: (refs/heads/[A-Za-z0-9][A-Za-z0-9._/-]*)")
# What the agent wrote is data (threat-model.md): no hook, no fsmonitor, no `ext::`
# transport, never a step into a nested repository (its config could name a filter).
_SAFE_BASE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "submodule.recurse=false",
    "-c",
    "status.submoduleSummary=false",
)
# git's settings for big trees (what `feature.manyFiles` sets in git 2.39, and a split
# index), given on the command line for the harness's own calls only: a goal's worktree
# gets a version 4 index (paths prefix-compressed, a smaller file to read and write), an
# untracked cache, so a scan stats the tracked files and reads only the folders whose mtime
# moved, and a split index, so each write is the small delta against a shared part written
# once (`.git/worktrees/<name>/sharedindex.*`, removed with the worktree). git keeps an
# index split or not as it is when the setting is absent, so other commands leave it be.
NEW_INDEX = (
    "-c",
    "index.version=4",
    "-c",
    "core.untrackedCache=true",
    "-c",
    "core.splitIndex=true",
)
# A whole tree written at once (a goal's worktree made, a detached checkout) is written by
# git's parallel checkout, one worker per core (git 2.32+; an older git ignores the key),
# for trees of 100 files or more (`checkout.thresholdForParallelism`): on 100,000 files and
# 2 cores, 2.9-3.3 s instead of 4.2-4.4 s (performance.md, "Sixth pass").
WHOLE_CHECKOUT = ("-c", "checkout.workers=0")
SCAN_CONFIG = (
    "-c",
    "core.untrackedCache=true",
    "-c",
    "core.splitIndex=true",
    "-c",
    "status.showUntrackedFiles=normal",
)


_maintained = False


def object_reader(path: Path) -> ObjectReader:
    return worktree_reader(path, safe_config())


def maintain_once(cwd: Path) -> None:
    """`git maintenance run --auto` (what `git commit` starts after each commit: a gc once
    loose objects pile up), once per process: a run commits a few times per goal, and a
    check after each commit was a sixth of a checkpoint's git processes (performance.md)."""
    global _maintained
    if _maintained:
        return
    _maintained = True
    run_git(["maintenance", "run", "--auto", "--quiet"], cwd)


@functools.cache
def installed_git() -> tuple[int, int] | None:
    """The installed git's (major, minor), read once per process."""
    return installed_version(CLEAN_ENV)


@functools.cache
def safe_config() -> tuple[str, ...]:
    """Options every harness git call gets: no hooks, no fsmonitor, fsync (by version)."""
    return (*_SAFE_BASE, *fsync_config(installed_git()))


DAMAGED_ADVICE = (
    "the object store is damaged (a cut or lost pack or object file, or objects pruned): "
    "nothing was changed; run `git fsck` to see what is lost and restore it from a backup, "
    "a remote or another clone"
)
HARNESS_NAME = "goal-harness"
HARNESS_EMAIL = "harness@goal-harness.invalid"


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    check: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """git with hooks and fsmonitor off, in the clean environment (plus `extra_env`)."""
    timeout = git_timeout_s()
    # Its own process group: on a timeout, a hook it started is ended with it.
    with subprocess.Popen(
        ["git", *safe_config(), *args],
        cwd=cwd,
        env=(CLEAN_ENV | dict(extra_env)) if extra_env else CLEAN_ENV,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as child:
        try:
            out, err = child.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise GitError(
                f"git {' '.join(args[:3])} did not finish in {timeout:g}s in {cwd} "
                "(a hung hook or remote?); HARNESS_GIT_TIMEOUT sets the limit"
            ) from None
        except BaseException:  # a signal: never wait on a git that hangs
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            raise
    proc = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    if check and proc.returncode != 0:
        lost = f"; {PRUNED}" if lost_objects(err) else ""
        raise GitError(f"git {' '.join(args[:3])} failed in {cwd}: {git_reason(err)}{lost}")
    return proc


def start_git(args: Sequence[str], cwd: Path, *, text: bool = False) -> subprocess.Popen[Any]:
    """A git process with the same environment and options as run_git, its output piped.

    For a library that reads git's output itself (GitPython, for a push's answer). In a
    session of its own, as run_git's: a ^C or a stop sent to the run's process group is the
    run's to handle, and must not kill a push half-way, reported as the stop's cause.
    """
    return subprocess.Popen(
        ["git", *safe_config(), *args],
        cwd=cwd,
        env=CLEAN_ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8" if text else None,
        errors="replace" if text else None,
        start_new_session=True,
    )


def git_text(args: Sequence[str], cwd: Path) -> str:
    return run_git(args, cwd).stdout.decode("utf-8", "replace").strip()


def stored_bytes(root: Path, rel: str, data: bytes) -> bytes:
    """The bytes git stores for `data` committed at `rel`: its line-ending conversion
    (core.autocrlf, `eol`/`text` attributes) applied, as `git add` would. `run` reads the
    committed blob, so what is approved and checked is this, not the working copy.

    A committed file's blob is already stored and only read; otherwise it is written to
    the object store (as `git add` would), and where that cannot be done (a read-only
    `.git`) the working copy's bytes are all there is."""
    args = ["hash-object", f"--path={rel}", "--stdin"]
    blob = run_git(args, root, input=data).stdout.decode().strip()
    stored = run_git(["cat-file", "blob", blob], root, check=False)
    if stored.returncode == 0:
        return stored.stdout
    made = run_git([args[0], "-w", *args[1:]], root, input=data, check=False)
    if made.returncode != 0:
        return data
    return run_git(["cat-file", "blob", made.stdout.decode().strip()], root).stdout


@dataclass(frozen=True)
class Repo:
    """The managed repository: its main worktree and its common git folder."""

    root: Path
    common_dir: Path

    @classmethod
    def discover(cls, start: Path) -> Repo:
        proc = run_git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel"],
            start,
            check=False,
        )
        lines = proc.stdout.decode().splitlines()
        if proc.returncode == 0 and len(lines) == 2:
            common, top = Path(lines[0]), Path(lines[1])
            if common.name == ".git" and top == common.parent:
                return cls(top, common)  # the usual case: inside the main worktree
        # Elsewhere (a goal's worktree, the .git folder itself, a bare repository) the
        # main worktree is found from the common git folder.
        proc = run_git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir"], start, check=False
        )
        if proc.returncode != 0:
            raise InvalidInput(f"{start}: not inside a git repository (run `git init` first)")
        common = Path(proc.stdout.decode().strip())
        root = (
            Path(git_text(["rev-parse", "--show-toplevel"], common.parent))
            if common.name == ".git"
            else None
        )
        if root is None:
            raise InvalidInput(f"{start}: bare repositories are not supported; use a checkout")
        return cls(root, common)

    def git(self, *args: str) -> str:
        return git_text(args, self.root)

    def rev_parse(self, ref: str) -> str | None:
        proc = run_git(["rev-parse", "-q", "--verify", f"{ref}^{{commit}}"], self.root, check=False)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def checked_out_ref(self) -> str:
        """The branch checked out in the main worktree, or its commit when detached."""
        try:
            head = (self.common_dir / "HEAD").read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            head = ""
        # What `git symbolic-ref HEAD` would say, read without a process, for a plain branch
        # name whose ref is not itself symbolic; anything else (a reftable repository's
        # placeholder, a detached HEAD, odd bytes, a chain of symbolic refs) asks git.
        match = _PLAIN_HEAD.fullmatch(head)
        if match and not self._is_symbolic(match[1]):
            return match[1]
        proc = run_git(["symbolic-ref", "-q", "HEAD"], self.root, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
        commit = self.rev_parse("HEAD")
        if commit is None:
            raise self.missing_commit("HEAD")
        return commit

    def missing_commit(self, ref: str) -> HarnessError:
        """Why `ref` names no commit git can read: none yet (exit 2), or its ref or the
        object it names is damaged (exit 3): a cut pack or a lost object file is never
        taken for a repository with no commits (cli.md, "Damaged objects")."""
        if ref == "HEAD":  # the branch it names, whose ref may be what is broken (read
            # from the file: git refuses to name a branch whose ref it cannot read)
            with contextlib.suppress(OSError, UnicodeDecodeError):
                named = _PLAIN_HEAD.fullmatch((self.common_dir / "HEAD").read_text().strip())
                ref = named[1] if named else ref
        listed = run_git(["for-each-ref", "--format=%(objectname)", ref], self.root, check=False)
        told = listed.stderr.decode("utf-8", "replace")
        oid = listed.stdout.decode().strip() or next(iter(named_objects(told)), "")
        if "broken ref" in told:
            return TrustFailure(
                f"{self.root}: {ref} is a broken ref (empty or not an object id, as a power "
                "cut can leave it); nothing was changed: run `git fsck`, and point the ref at "
                "its commit again (`git reflog`, a remote or another clone)"
            )
        if not oid and ref == "HEAD":
            head = run_git(["rev-parse", "-q", "--verify", "HEAD"], self.root, check=False)
            oid = head.stdout.decode().strip()
        if not oid:
            return InvalidInput(f"{self.root}: the repository has no commits yet; commit first")
        read = run_git(["cat-file", "-t", oid], self.root, check=False)
        if read.returncode == 0:
            kind = read.stdout.decode().strip()
            return InvalidInput(f"{self.root}: {ref} names a {kind} ({oid}), not a commit")
        return TrustFailure(
            f"{self.root}: {ref} names git object {oid}, which git cannot read: "
            f"{git_reason(read.stderr + listed.stderr) or 'missing'}; {DAMAGED_ADVICE}"
        )

    def _is_symbolic(self, ref: str) -> bool:
        try:
            return (self.common_dir / ref).read_bytes().startswith(b"ref:")
        except OSError:
            return False  # packed, or not born yet: a plain ref

    def read_blob(self, ref: str, path: str) -> bytes | None:
        proc = run_git(["cat-file", "blob", f"{ref}:{path}"], self.root, check=False)
        return proc.stdout if proc.returncode == 0 else None

    def list_names(self, ref: str, folder: str) -> list[str]:
        """File names directly inside `folder` at `ref` (empty when absent)."""
        proc = run_git(["ls-tree", "--name-only", f"{ref}:{folder}"], self.root, check=False)
        if proc.returncode != 0:
            return []
        return proc.stdout.decode("utf-8", "replace").splitlines()

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = run_git(["merge-base", "--is-ancestor", older, newer], self.root, check=False)
        return proc.returncode == 0

    def worktree_path(self, goal_id: str) -> Path:
        return self.root / ".harness" / "worktrees" / goal_id

    def ensure_excluded(self, pattern: str) -> None:
        """Keep harness-owned folders out of `git status` even before `harness init`."""
        exclude = self.common_dir / "info" / "exclude"
        text = exclude.read_text() if exclude.exists() else ""
        if pattern not in text.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a") as handle:
                handle.write(("" if text.endswith("\n") or not text else "\n") + pattern + "\n")

    def repair_worktree(self, path: Path) -> None:
        """Undo what a killed `git worktree add` left: a worktree marked as initializing.

        Such a checkout is incomplete; committing it would record deletions. It holds no
        work yet, so it is removed and made again.
        """
        admin = self._admin_dir(path)
        if admin is None or not (admin / "locked").is_file():
            return
        if (admin / "locked").read_text().strip() != "initializing":
            return
        forget_reader(path)
        with worktree_admin(self.common_dir):
            run_git(["worktree", "unlock", str(path)], self.root, check=False)
            run_git(["worktree", "remove", "--force", str(path)], self.root, check=False)
            run_git(["worktree", "prune"], self.root)

    def _admin_dir(self, path: Path) -> Path | None:
        link = path / ".git"
        if not link.is_file():
            return None
        text = link.read_text().strip()
        return Path(text.removeprefix("gitdir: ")) if text.startswith("gitdir: ") else None

    def drop_empty_objects(self) -> list[str]:
        """Remove loose object files of no bytes, as a power cut leaves an unsynced one.

        git never writes an object file at its final name until it is complete, so an empty
        one holds nothing, and git takes it as present: the next `git add` of the same
        content would not write it again and the commit would name an object that cannot
        be read. Removed, it is written again. Returns the object ids removed."""
        dropped = []
        with contextlib.suppress(FileNotFoundError):
            for folder in os.scandir(self.common_dir / "objects"):
                if len(folder.name) != 2 or not folder.is_dir(follow_symlinks=False):
                    continue
                for entry in os.scandir(folder.path):
                    # Only files under an object's name: git writes each object first to
                    # `tmp_obj_*` in the same folder, empty for a moment, and removing that
                    # under another process (a second runner in this clone) fails its write.
                    if not _OBJECT_NAME.fullmatch(entry.name):
                        continue
                    if entry.is_file(follow_symlinks=False) and entry.stat().st_size == 0:
                        os.unlink(entry.path)
                        dropped.append(folder.name + entry.name)
        return dropped

    def harness_dir(self) -> Path:
        """Machine-local harness state (locks, logs): inside .git, never committed."""
        folder = self.common_dir / "harness"
        folder.mkdir(parents=True, exist_ok=True)
        return folder
