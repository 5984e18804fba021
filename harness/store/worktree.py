"""A goal's git worktree (`Worktree`: its own branch, the one place its files are read,
staged and committed): opened only when it is on the goal's branch, or created; and the
worktrees git has registered."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import TrustFailure
from harness.store.catfile import forget_reader, tree_without_entry
from harness.store.fsutil import fsync_dir
from harness.store.gitenv import PRUNED, git_reason
from harness.store.gitrepo import (
    HARNESS_EMAIL,
    HARNESS_NAME,
    NEW_INDEX,
    SCAN_CONFIG,
    WHOLE_CHECKOUT,
    GitError,
    Repo,
    git_text,
    installed_git,
    maintain_once,
    object_reader,
    run_git,
)
from harness.store.gitversion import needs_ref_fsync
from harness.store.headlog import branch_gone, head_file_names
from harness.store.lock import worktree_admin


def open_worktree(repo: Repo, goal_id: str, branch: str) -> Worktree | None:
    """The goal's worktree if it exists, checked to be on `branch`."""
    return checked_worktree(repo.worktree_path(goal_id), branch)


def checked_worktree(path: Path, branch: str) -> Worktree | None:
    """The worktree at `path` if it exists, checked to be on `branch` (TrustFailure when it
    is on another branch or a detached HEAD, or its branch is gone: nothing there is used
    or moved)."""
    if not (path / ".git").exists():
        return None
    wt = Worktree(path)
    # One process: the full name of HEAD's branch, "HEAD" when detached; it fails when the
    # branch HEAD names is missing or broken, and the HEAD file then says which it is.
    named = run_git(["rev-parse", "--symbolic-full-name", "HEAD"], path, check=False)
    actual = named.stdout.decode().strip().removeprefix("refs/heads/")
    if actual == branch and named.returncode == 0:
        return wt
    if named.returncode != 0 and head_file_names(path, branch):
        raise branch_gone(path, branch)
    raise TrustFailure(
        f"{path}: the worktree is on {actual if actual not in ('', 'HEAD') else 'a detached HEAD'!r}"
        f", not {branch!r}; check it out again or remove it with `git worktree remove`"
    )


def ensure_worktree(repo: Repo, goal_id: str, branch: str, base: str) -> Worktree:
    """The goal's worktree, created (from `branch`, or a new `branch` at `base`)."""
    existing = open_worktree(repo, goal_id, branch)
    if existing is not None:
        return existing
    return add_worktree(repo, repo.worktree_path(goal_id), branch, base)


@dataclass(frozen=True)
class RegisteredWorktree:
    """One entry of `git worktree list --porcelain`."""

    path: Path
    head: str | None
    branch: str | None  # the full ref (`refs/heads/…`); None on a detached HEAD
    prunable: str | None  # git's reason ("" when it gives none); None when not prunable


def list_worktrees(repo: Repo) -> list[RegisteredWorktree]:
    """Every worktree git has registered for the repository, the main one first."""
    listing = run_git(["worktree", "list", "--porcelain"], repo.root).stdout
    return parse_worktrees(listing.decode("utf-8", "replace"))


def parse_worktrees(porcelain: str) -> list[RegisteredWorktree]:
    """`git worktree list --porcelain`: blocks of `key value` lines, one block per entry."""
    entries = []
    for block in porcelain.strip().split("\n\n"):
        pairs = (line.partition(" ") for line in block.splitlines() if line.strip())
        fields = {key: value for key, _, value in pairs}
        if "worktree" in fields:
            entries.append(
                RegisteredWorktree(
                    Path(fields["worktree"]),
                    fields.get("HEAD"),
                    fields.get("branch"),
                    fields.get("prunable"),
                )
            )
    return entries


def add_worktree(repo: Repo, path: Path, branch: str, start: str) -> Worktree:
    """A worktree at `path` on `branch`, made from `start` when the branch is new."""
    repo.ensure_excluded("/.harness/worktrees/")
    new = repo.rev_parse(f"refs/heads/{branch}") is None
    forget_reader(path)
    with worktree_admin(repo.common_dir):
        run_git(["worktree", "prune"], repo.root)
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
                repo.root,
            )
        else:
            add = [*NEW_INDEX, *WHOLE_CHECKOUT, "worktree", "add", "-q", str(path), branch]
            run_git(add, repo.root)
    return Worktree(path)


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
        return object_reader(self.path).commit_id("HEAD") or self.git("rev-parse", "HEAD")

    def blob(self, spec: str) -> bytes | None:
        """The blob at `spec` (e.g. `HEAD:<path>`), or None when git has none there."""
        found = object_reader(self.path).blob(spec)
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
        return self.tree_without(self.write_tree(), exclude_top)

    def write_tree(self) -> str:
        """`git write-tree` of the index. An entry naming an object git no longer has fails
        it, and every later one: a `git gc --prune=now` (or `git prune`) beside a run can
        remove a blob `git add` has just written before the index naming it is written
        (remote.md, "Objects pruned during a run"). The files are the truth, so the index
        is made again from HEAD and everything staged again, which writes the blobs again;
        once. A goal is never stranded by it."""
        made = run_git(["write-tree"], self.path, check=False)
        if made.returncode == 0:
            return made.stdout.decode().strip()
        if b"invalid object" not in made.stderr:
            raise GitError(f"git write-tree failed in {self.path}: {git_reason(made.stderr)}")
        self.rebuild_index()
        self.stage_all()
        again = run_git(["write-tree"], self.path, check=False)
        if again.returncode != 0:
            raise GitError(
                f"git write-tree failed in {self.path}: {git_reason(again.stderr)}, even with "
                f"the index made again from HEAD: {PRUNED}"
            )
        return again.stdout.decode().strip()

    def write_lost_objects(self) -> None:
        """Write again, from the index and the files, objects git has lost that they still
        hold: a `git gc --prune=now` beside a run can remove a tree or blob a commit was
        just made of before the branch named it (remote.md, "Objects pruned during a run").
        Objects are named by their content, so this can only bring back the very objects
        that are missing, never change one: the trees of the index, then every tracked
        file's blob (hashed again whatever the index says of it), then the trees again."""
        run_git(["write-tree"], self.path, check=False)
        tracked = run_git(["ls-files", "-z", "--cached"], self.path, check=False).stdout
        files = [p for p in tracked.split(b"\0") if p and (self.path / os.fsdecode(p)).is_file()]
        if files:
            paths = b"".join(p + b"\n" for p in files if b"\n" not in p)
            run_git(["hash-object", "-w", "--stdin-paths"], self.path, input=paths, check=False)
        run_git(["write-tree"], self.path, check=False)

    def tree_without(self, tree: str, exclude_top: str = "ledger") -> str:
        """The tree id of `tree` (any tree-ish) without its top-level `exclude_top` entry.

        Read and hashed through the worktree's object reader; git writes the tree only
        when it does not exist yet (a work tree seen before, the common case, costs no
        git process)."""
        reader = object_reader(self.path)
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
        maintain_once)."""
        if paths is None:
            self.stage_all()
        else:
            self.stage_paths(paths)
        tree = self.write_tree()
        ident = ["-c", f"user.name={HARNESS_NAME}", "-c", f"user.email={HARNESS_EMAIL}"]
        made = run_git(
            [*ident, "commit-tree", "--no-gpg-sign", tree, "-p", "HEAD", "-m", message],
            self.path,
        )
        commit = made.stdout.decode().strip()
        run_git(["update-ref", "-m", f"commit: {message}", "HEAD", commit, f"{commit}^"], self.path)
        if needs_ref_fsync(installed_git()):
            self.fsync_branch()
        maintain_once(self.path)
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
