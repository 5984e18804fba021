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
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InvalidInput
from harness.store.catfile import (
    ObjectReader,
    forget_reader,
    tree_without_entry,
    worktree_reader,
)
from harness.store.fsutil import fsync_dir
from harness.store.gitenv import CLEAN_ENV, git_reason, git_timeout_s
from harness.store.gitenv import GitError as GitError  # where every caller imports it from
from harness.store.gitversion import fsync_config, installed_version, needs_ref_fsync
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


def _reader(path: Path) -> ObjectReader:
    return worktree_reader(path, safe_config())


def _maintain_once(cwd: Path) -> None:
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
        raise GitError(f"git {' '.join(args[:3])} failed in {cwd}: {git_reason(err)}")
    return proc


def start_git(args: Sequence[str], cwd: Path, *, text: bool = False) -> subprocess.Popen[Any]:
    """A git process with the same environment and options as run_git, its output piped.

    For a library that reads git's output itself (GitPython, for a push's answer).
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
            raise InvalidInput(f"{self.root}: the repository has no commits yet; commit first")
        return commit

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

    def add_worktree(self, path: Path, branch: str, start: str) -> Worktree:
        self.ensure_excluded("/.harness/worktrees/")
        new = self.rev_parse(f"refs/heads/{branch}") is None
        forget_reader(path)
        with worktree_admin(self.common_dir):
            run_git(["worktree", "prune"], self.root)
            if new:
                run_git(
                    [
                        *NEW_INDEX,
                        *WHOLE_CHECKOUT,
                        "worktree",
                        "add",
                        "-q",
                        "-b",
                        branch,
                        str(path),
                        start,
                    ],
                    self.root,
                )
            else:
                add = [*NEW_INDEX, *WHOLE_CHECKOUT, "worktree", "add", "-q", str(path), branch]
                run_git(add, self.root)
        return Worktree(path)

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


def _remove_entry(path: Path) -> None:
    """A file, a link, or a folder (a nested repository a build made) with all inside it;
    links are removed, never followed."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def status_paths(porcelain: bytes) -> list[str]:
    """The paths `git status --porcelain=v1 -z --no-renames` shows changed in the worktree
    against the index (its second column; a change already staged needs nothing). An
    untracked folder shown as `name/` is named without its slash: git adds it as `add -A`
    would (its files, or a nested repository as a gitlink)."""
    paths = []
    for entry in porcelain.split(b"\0"):
        if len(entry) > 3 and entry[1:2] != b" ":
            paths.append(entry[3:].decode("utf-8", "surrogateescape").rstrip("/"))
    return paths


@dataclass(frozen=True)
class Worktree:
    """A goal's own worktree, on its own branch."""

    path: Path

    def git(self, *args: str) -> str:
        return git_text(args, self.path)

    def head(self) -> str:
        return _reader(self.path).commit_id("HEAD") or self.git("rev-parse", "HEAD")

    def blob(self, spec: str) -> bytes | None:
        """The blob at `spec` (e.g. `HEAD:<path>`), or None when git has none there."""
        found = _reader(self.path).blob(spec)
        if found is None:  # confirmed by git the old way: a reader never hides a blob
            proc = run_git(["cat-file", "blob", spec], self.path, check=False)
            found = proc.stdout if proc.returncode == 0 else None
        return found

    def branch(self) -> str:
        return self.git("symbolic-ref", "-q", "--short", "HEAD")

    def stage_all(self) -> None:
        """Stage every change in the worktree, as `git add -A` would, from one scan.

        `git status` (which refreshes the index and reads the untracked cache) names what
        differs from the index; only those paths are then staged, so the cost grows with
        the tree's size by one stat pass and with what changed otherwise (performance.md,
        "Scale"). Ignore rules apply exactly as for `git add -A`; the ignored files a
        build adds are checked apart (`textlike.ignored_entries`). Submodules are never
        looked into (`--ignore-submodules=all`): a status of a nested repository runs with
        that repository's configuration, which the agent wrote (its filters would run here,
        as the runner). A nested repository a build makes is tamper (`nested.py`)."""
        args = ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=normal"]
        out = run_git([*SCAN_CONFIG, *args, "--ignore-submodules=all"], self.path).stdout
        self.stage_paths(status_paths(out))

    def stage_paths(self, paths: Sequence[str]) -> None:
        """`git add -A` limited to `paths` (literal): stages their changes and deletions."""
        if paths:
            spec = b"".join(f":(literal){p}\0".encode("utf-8", "surrogateescape") for p in paths)
            args = ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"]
            run_git([*SCAN_CONFIG, *args], self.path, input=spec)

    def work_tree_id(self, exclude_top: str = "ledger") -> str:
        """Stage everything and return the git tree id of the work without `exclude_top`.

        The ledger changes at every step, so it is left out of the fingerprint that
        no-progress detection and read-only checks compare.
        """
        self.stage_all()
        return self.staged_tree(exclude_top)

    def staged_tree(self, exclude_top: str = "ledger") -> str:
        """The work tree id of what is staged now (no scan: the caller has just staged)."""
        return self.tree_without(self.git("write-tree"), exclude_top)

    def tree_without(self, tree: str, exclude_top: str = "ledger") -> str:
        """The tree id of `tree` (any tree-ish) without its top-level `exclude_top` entry.

        Read and hashed through the worktree's object reader; git writes the tree only
        when it does not exist yet (a work tree seen before, the common case, costs no
        git process)."""
        reader = _reader(self.path)
        hashed = tree_without_entry(reader, tree, exclude_top)
        if hashed is not None:
            if reader.read(hashed[0]) is not None:
                return hashed[0]
            args = ["hash-object", "-w", "-t", "tree", "--stdin"]
            return run_git(args, self.path, input=hashed[1]).stdout.decode().strip()
        listing = run_git(["ls-tree", "-z", tree], self.path).stdout
        kept = [
            e for e in listing.split(b"\0") if e and not e.endswith(b"\t" + exclude_top.encode())
        ]
        made = run_git(["mktree", "-z"], self.path, input=b"".join(e + b"\0" for e in kept))
        return made.stdout.decode().strip()

    def tree_changes(self, old: str, new: str) -> list[str]:
        """The paths that differ between two trees (no renames, attributes not consulted)."""
        args = ["diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-textconv"]
        out = run_git([*args, "--no-ext-diff", old, new], self.path).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]

    def add_checkout(self, commit: str, path: Path) -> None:
        """A fresh detached checkout of exactly `commit`, from the object store, at `path`."""
        with worktree_admin(self._common_dir()):
            add = [*WHOLE_CHECKOUT, "worktree", "add", "-q", "--detach", str(path), commit]
            run_git(add, self.path)

    def remove_checkout(self, path: Path) -> None:
        with worktree_admin(self._common_dir()):
            run_git(["worktree", "remove", "--force", str(path)], self.path, check=False)
            run_git(["worktree", "prune"], self.path, check=False)

    def _common_dir(self) -> Path:
        """The common git folder, from the worktree's `.git` file and its admin folder's
        `commondir` (as git finds it); git is asked when they cannot be read."""
        try:
            dot = self.path / ".git"
            if dot.is_dir():
                return dot
            admin = self.path / dot.read_text("utf-8").strip().removeprefix("gitdir:").strip()
            return (admin / (admin / "commondir").read_text("utf-8").strip()).resolve()
        except (OSError, UnicodeDecodeError):
            args = ["rev-parse", "--path-format=absolute", "--git-common-dir"]
            return Path(git_text(args, self.path))

    def commit(self, message: str, paths: Sequence[str] | None = None) -> str:
        """Commit as the harness; returns the new commit id.

        With `paths`, only they are staged first: the rest of the commit is what the last
        scan staged (the tree the caller has just recorded), so a commit costs no scan of
        the whole tree. Without, everything is staged. The commit is made with
        `commit-tree` and `update-ref` against the head it was built on (`<new>^`, so a
        head moved meanwhile refuses the update), in four git processes; git's own
        automatic maintenance runs after the first commit of each process (see
        _maintain_once)."""
        if paths is None:
            self.stage_all()
        else:
            self.stage_paths(paths)
        tree = self.git("write-tree")
        ident = ["-c", f"user.name={HARNESS_NAME}", "-c", f"user.email={HARNESS_EMAIL}"]
        made = run_git(
            [*ident, "commit-tree", "--no-gpg-sign", tree, "-p", "HEAD", "-m", message],
            self.path,
        )
        commit = made.stdout.decode().strip()
        run_git(["update-ref", "-m", f"commit: {message}", "HEAD", commit, f"{commit}^"], self.path)
        if needs_ref_fsync(installed_git()):
            self.fsync_branch()
        _maintain_once(self.path)
        return commit

    def fsync_branch(self) -> None:
        """For git without core.fsync: the branch ref this commit moved (or packed-refs), and
        the folders naming it, reach the disk before the commit is taken as made."""
        common = Path(
            git_text(["rev-parse", "--path-format=absolute", "--git-common-dir"], self.path)
        )
        ref = common / git_text(["symbolic-ref", "-q", "HEAD"], self.path)
        for path in (ref, common / "packed-refs"):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                fsync_dir(path.parent)

    def clear_stale_index_lock(self) -> bool:
        """Remove an index.lock left by a killed git process. The caller holds the goal's
        lock and has ended the goal's leftover processes, so nothing else can own it."""
        lock = Path(git_text(["rev-parse", "--git-path", "index.lock"], self.path))
        lock = lock if lock.is_absolute() else self.path / lock
        if lock.exists():
            lock.unlink()
            return True
        return False

    def index_readable(self) -> bool:
        """Whether git can read the worktree's index. A power cut can cut the index or lose
        the shared part of a split one (git fsyncs neither under core.fsync=committed),
        and git then refuses every command that reads it. One process, reading the index
        and listing nothing."""
        args = ["ls-files", "-z", "--", ":(literal).harness-index-probe"]
        return run_git(args, self.path, check=False).returncode == 0

    def rebuild_index(self) -> None:
        """The index made again from HEAD: git trusts the index's entries and cached tree
        ids without reading their objects, so after objects were dropped every file is
        hashed (and written) again at the next `git add`. HEAD itself unreadable: the
        index is left as it is (loading the goal refuses that)."""
        index = Path(git_text(["rev-parse", "--git-path", "index"], self.path))
        index = index if index.is_absolute() else self.path / index
        kept = index.read_bytes() if index.is_file() else None
        index.unlink(missing_ok=True)
        reset = run_git([*NEW_INDEX, "reset", "-q"], self.path, check=False)
        if reset.returncode != 0 and kept is not None:
            index.write_bytes(kept)

    def changed_paths(self, base: str) -> list[str]:
        """Every path that differs between commit `base` and the working tree (staged)."""
        self.stage_all()
        out = run_git(["diff", "--cached", "--name-only", "-z", "--no-renames", base], self.path)
        return [p for p in out.stdout.decode("utf-8", "replace").split("\0") if p]

    def guarded_files(self) -> list[Path]:
        """git's own configuration for this worktree: repository, worktree, user."""
        args = ["rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir"]
        admin, common = map(Path, git_text(args, self.path).splitlines())
        home = Path(os.environ.get("HOME", "~")).expanduser()
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
        files = [common / "config", common / "info" / "attributes", admin / "config.worktree"]
        files += [admin / "commondir", admin / "gitdir", self.path / ".git"]
        # Excludes and attributes outside the tree: a file they hide is never staged, so
        # never checked, yet there when the judge runs (issue 13).
        files += [common / "info" / "exclude", xdg / "ignore", *self._configured_files()]
        return [*files, home / ".gitconfig", xdg / "config", xdg / "attributes"]

    def _configured_files(self) -> list[Path]:
        # Every value set for either key (git uses the last; all are guarded), in one call.
        pattern = r"^core\.(excludesfile|attributesfile)$"
        args = ["config", "--path", "-z", "--get-regexp", pattern]
        got = run_git(args, self.path, check=False)
        if got.returncode != 0:
            return []
        entries = got.stdout.decode("utf-8", "replace").split("\0")
        values = [entry.partition("\n")[2] for entry in entries if entry]
        return [Path(value) for value in values if value.strip()]

    def diff_text(self, base: str, as_text: Sequence[str] = ()) -> str:
        """The staged change since `base`, stable whatever the user's diff config says,
        without the harness-owned paths (their changes are tampering, checked elsewhere).

        `as_text`: paths git would call binary (a `-diff` attribute, a NUL byte) that are
        shown line by line all the same (`--text`), whatever the attributes say."""
        args = ["diff", "--cached", "-U0", "--no-renames", "--no-color", "--no-ext-diff"]
        args += ["--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", base, "--"]
        own = [":(exclude)ledger", ":(exclude).harness", ":(exclude)goals", ":(exclude)*.approval"]
        forced = [f":(literal){p}" for p in as_text]
        rest = [f":(exclude,literal){p}" for p in as_text]
        out = run_git([*args, ".", *own, *rest], self.path).stdout
        if forced:
            out += run_git([*args[:1], "--text", *args[1:], *forced], self.path).stdout
        return out.decode("utf-8", "replace")

    def restore_paths(self, base: str, paths: Iterable[str]) -> None:
        """Put `paths` back as they were at `base` (deleting those that did not exist)."""
        for path in paths:
            existed = run_git(["cat-file", "-e", f"{base}:{path}"], self.path, check=False)
            if existed.returncode == 0:
                run_git(["checkout", base, "--", path], self.path)
            else:
                run_git(["rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", path], self.path)
                _remove_entry(self.path / path)
                self._drop_empty_parents(path)

    def _drop_empty_parents(self, rel: str) -> None:
        """The folders a removed file leaves empty (a `__pycache__/`), up to the worktree."""
        parent = (self.path / rel).parent
        while parent != self.path and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent

    def is_ancestor(self, older: str, newer: str = "HEAD") -> bool:
        proc = run_git(["merge-base", "--is-ancestor", older, newer], self.path, check=False)
        return proc.returncode == 0
