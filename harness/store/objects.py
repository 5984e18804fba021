"""Reading many git objects at once: one `cat-file --batch` process for many blobs, trees
and commits (`ObjectReader`, `read_blobs`), and the goal branches' heads (`branch_heads`).

Kept apart from `gitrepo` (one git call per process) because these readers keep a process
or parse git's batch output themselves; both use gitrepo's clean environment.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.store.gitenv import CLEAN_ENV, git_reason, named_objects
from harness.store.gitrepo import (
    GitError,
    run_git,
    safe_config,
)


class ObjectReader:
    """Many object reads through one `git cat-file --batch` process, started on first use.

    A run reads the config, the owners, and every goal's file and approvals from one
    commit; one process for all of them instead of one per file is most of what a run
    that finds nothing to do costs. `close()` ends it; so does this process ending (git
    reads end-of-file on its input).
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._proc: subprocess.Popen[bytes] | None = None

    def read(self, spec: str) -> tuple[str, str, bytes] | None:
        """(object id, type, content) of `<rev>` or `<rev>:<path>`, or None when absent."""
        if not spec or "\n" in spec or "\0" in spec:  # one request per line; git stops at NUL
            return None
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(spec.encode("utf-8") + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline()
            parts = header.split()
            found = len(parts) == 3 and not header.endswith(b" missing\n")
            data = proc.stdout.read(int(parts[2]) + 1) if found else b""
        except (OSError, ValueError):
            header, found, data = b"", False, b""
        except BaseException:
            # Cut off half-way (a signal): an answer may still be on its way, and the next
            # read must never take it for its own. A new process starts clean.
            self.close()
            raise
        if not header or (found and not data.endswith(b"\n")):
            self.close()
            raise GitError(f"git cat-file --batch stopped answering in {self._root}")
        if not found:
            return None
        return parts[0].decode(), parts[1].decode(), data[:-1]

    def blob(self, spec: str) -> bytes | None:
        found = self.read(spec)
        return found[2] if found is not None and found[1] == "blob" else None

    def commit_id(self, rev: str) -> str | None:
        found = self.read(f"{rev}^{{commit}}")
        return found[0] if found is not None and found[1] == "commit" else None

    def names(self, spec: str) -> list[str]:
        """Entry names of the tree at `spec` (empty when it is absent or not a tree)."""
        return list(self.entries(spec))

    def entries(self, spec: str) -> dict[str, tuple[str, str]]:
        """Entry name -> (mode, object id) of the tree at `spec` (empty when it is absent or
        not a tree); a mode of 40000 is a tree, 160000 a commit, any other a blob."""
        found = self.read(spec)
        if found is None or found[1] != "tree":
            return {}
        oid_bytes = len(found[0]) // 2
        data, entries, offset = found[2], {}, 0
        try:
            while offset < len(data):
                space = data.index(b" ", offset)
                nul = data.index(b"\0", space)
                name = data[space + 1 : nul].decode("utf-8", "replace")
                mode = data[offset:space].decode("ascii", "replace")
                entries[name] = (mode, data[nul + 1 : nul + 1 + oid_bytes].hex())
                offset = nul + 1 + oid_bytes
        except ValueError:
            raise GitError(f"{spec}: the git tree object is malformed") from None
        if offset != len(data):
            raise GitError(f"{spec}: the git tree object is malformed")
        return entries

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._proc = subprocess.Popen(
                ["git", *safe_config(), "cat-file", "--batch"],
                cwd=self._root,
                env=CLEAN_ENV,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self._proc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(OSError):  # git may have gone already
            proc.stdin.close()
        proc.stdout.close()
        proc.wait()


def tree_without_entry(reader: ObjectReader, spec: str, exclude: str) -> tuple[str, bytes] | None:
    """(id, body) of the tree at `spec` without its top-level entry `exclude`, computed as
    `git mktree` writes it from `ls-tree` of that tree: modes as octal without leading
    zeros, entries in git's order. The object itself is not written. None when git cannot
    read `spec` as a tree here (the caller asks git the old way)."""
    found = reader.read(f"{spec}^{{tree}}")
    if found is None or found[1] != "tree":
        return None
    oid_bytes = len(found[0]) // 2
    data, kept, offset = found[2], [], 0
    try:
        while offset < len(data):
            space = data.index(b" ", offset)
            nul = data.index(b"\0", space)
            mode, name = int(data[offset:space], 8), data[space + 1 : nul]
            oid = data[nul + 1 : nul + 1 + oid_bytes]
            if len(oid) != oid_bytes:
                return None
            offset = nul + 1 + oid_bytes
            if name != exclude.encode("utf-8", "surrogateescape"):
                kept.append((name + b"/" if mode == 0o40000 else name, mode, name, oid))
    except ValueError:
        return None
    kept.sort()
    body = b"".join(b"%o %s\0%s" % (mode, name, oid) for _, mode, name, oid in kept)
    algo = "sha256" if oid_bytes == 32 else "sha1"
    return hashlib.new(algo, b"tree %d\0" % len(body) + body).hexdigest(), body


def read_blobs(repo_root: Path, specs: Sequence[str]) -> list[bytes | None]:
    """Many `<rev>:<path>` blobs through one `git cat-file --batch` process."""
    if not specs:
        return []
    request = "".join(f"{spec}\n" for spec in specs).encode()
    data = run_git(["cat-file", "--batch"], repo_root, input=request).stdout
    blobs: list[bytes | None] = []
    offset = 0
    for _ in specs:
        end = data.index(b"\n", offset)
        header = data[offset:end].split()
        offset = end + 1
        if len(header) != 3:
            blobs.append(None)
            continue
        size = int(header[2])
        blobs.append(data[offset : offset + size])
        offset += size + 1
    return blobs


def branch_heads(repo_root: Path, prefix: str) -> dict[str, str]:
    """Branch name (without refs/heads/) -> commit, for branches starting with `prefix`."""
    out = run_git(
        ["for-each-ref", "--format=%(refname:short) %(objectname)", f"refs/heads/{prefix}"],
        repo_root,
    ).stdout.decode()
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


@dataclass(frozen=True)
class Unreadable:
    """A git object a goal branch needs that git cannot read: missing, empty or corrupt."""

    oid: str
    path: str  # where the branch holds it ("" for a commit or when unknown, "." a root tree)
    reason: str


class ObjectCheck:
    """Reads every object a goal branch's record stands on, in four git processes.

    `rev-list --objects <head> --not <since>` parses every commit and tree the branch added
    (those on `since`, the control commit, are the project's, not the record's);
    `cat-file --batch-check` finds each of them and each blob they name (its header is
    read); `cat-file --batch` reads the whole of every blob the branch added except the
    older versions of the files below `ledger` (each commit's segment is a longer copy of
    the last, so reading them all would grow with the square of the ledger; the head's
    are read whole). That last read runs while the caller checks the ledger, and is waited
    for in `finish`.
    """

    def __init__(self, root: Path, head: str, since: Sequence[str], ledger: str) -> None:
        self._root, self._head = root, head
        self._names: dict[str, str] = {}
        self._found: Unreadable | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._full: subprocess.Popen[bytes] | None = None
        listing = run_git(["ls-tree", "-r", "-z", head, "--", ledger], root, check=False)
        at_head = {oid for oid, kind, _ in _tree_rows(listing.stdout) if kind == "blob"}
        walk = run_git(["rev-list", "--objects", head, "--not", *since, "--"], root, check=False)
        if walk.returncode != 0:
            self._found = self._broken(walk.stderr)
            return
        oids, whole = [], []
        for line in walk.stdout.decode("utf-8", "replace").splitlines():
            oid, tree_or_blob, path = line.partition(" ")  # a commit has no path, a root tree ""
            oids.append(oid)
            self._names.setdefault(oid, (path or ".") if tree_or_blob else "")
            if path and (oid in at_head or not path.startswith(ledger)):
                whole.append(oid)  # trees too: git reads them again, cheaply
        check = run_git(
            ["cat-file", "--batch-check"],
            root,
            input="".join(f"{oid}\n" for oid in oids).encode(),
            check=False,
        )
        for line in check.stdout.decode("utf-8", "replace").splitlines():
            oid, _, kind = line.partition(" ")
            if kind == "missing":
                self._found = Unreadable(oid, self._names.get(oid, ""), _reason(check.stderr, oid))
                return
        if check.returncode != 0:
            self._found = self._broken(check.stderr)
            return
        with tempfile.TemporaryFile() as request:
            request.write("".join(f"{oid}\n" for oid in whole).encode())
            request.seek(0)
            self._full = subprocess.Popen(
                ["git", *safe_config(), "cat-file", "--batch"],
                cwd=root,
                env=CLEAN_ENV,
                stdin=request,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
            )

    def finish(self) -> Unreadable | None:
        """The first object git could not read, or None; ends the reading process."""
        try:
            if self._found is None and self._full is not None and self._full.wait() != 0:
                self._stderr.seek(0)
                self._found = self._broken(self._stderr.read())
            return self._found
        finally:
            self.close()

    def _broken(self, stderr: bytes) -> Unreadable:
        found = named_objects(stderr)
        oid = next((o for o in found if o in self._names), found[0] if found else self._head)
        return Unreadable(
            oid, self._names.get(oid) or self._path_at_head(oid), _reason(stderr, oid)
        )

    def _path_at_head(self, oid: str) -> str:
        """Where the head's tree holds `oid` (a failed walk named no path), or ""."""
        listing = run_git(["ls-tree", "-r", "-t", "-z", self._head], self._root, check=False)
        return next((path for got, _, path in _tree_rows(listing.stdout) if got == oid), "")

    def close(self) -> None:
        if self._full is not None and self._full.poll() is None:
            self._full.kill()
            self._full.wait()
        self._stderr.close()


def _tree_rows(listing: bytes) -> list[tuple[str, str, str]]:
    rows = []
    for entry in listing.split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3:
            rows.append((parts[2].decode(), parts[1].decode(), path.decode("utf-8", "replace")))
    return rows


def _reason(stderr: bytes, oid: str) -> str:
    """git's words for the object (its line naming it or its file), else `missing`."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    path = f"{oid[:2]}/{oid[2:]}"
    named = [line for line in lines if oid in line or path in line]
    return git_reason("\n".join(named)) if named else "missing"
