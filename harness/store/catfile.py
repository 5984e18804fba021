"""One `git cat-file --batch` process for many object reads (`ObjectReader`), and a
tree without one entry hashed in-process (`tree_without_entry`).

Apart from `gitrepo` and `objects` so that both can use it: it needs only git's clean
environment; the caller gives git's options.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.store.gitenv import CLEAN_ENV, GitError


class ObjectReader:
    """Many object reads through one `git cat-file --batch` process, started on first use.

    A run reads the config, the owners, and every goal's file and approvals from one
    commit; one process for all of them instead of one per file is most of what a run
    that finds nothing to do costs. `close()` ends it; so does this process ending (git
    reads end-of-file on its input).
    """

    def __init__(self, root: Path, options: Sequence[str] = ()) -> None:
        self._root = root
        self._options = tuple(options)  # git's own options (gitrepo.safe_config)
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
                ["git", *self._options, "cat-file", "--batch"],
                cwd=self._root,
                env=CLEAN_ENV,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                # A session of its own: a stop sent to the run's whole process group (Ctrl-C,
                # a service manager) is the run's to handle; killed under it, this reader's
                # death would be reported instead of the stop.
                start_new_session=True,
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


_readers: dict[Path, ObjectReader] = {}


def worktree_reader(path: Path, options: Sequence[str]) -> ObjectReader:
    """One reader for the worktree the process is working in (the last one asked for; a
    run advances one goal at a time), so a step's reads of HEAD, its cell and its trees
    start no git process each."""
    if path not in _readers:
        for old in _readers.values():
            old.close()
        _readers.clear()
        _readers[path] = ObjectReader(path, options)
    return _readers[path]


def forget_readers() -> None:
    """End every reader this process keeps (one that reads repositories other processes
    change between its reads: the tests' in-process looks)."""
    for path in list(_readers):
        forget_reader(path)


def forget_reader(path: Path) -> None:
    """End the reader of `path`: its worktree is being made or removed, and git resolved
    the worktree's own folder (its HEAD) when the reader started."""
    reader = _readers.pop(path, None)
    if reader is not None:
        reader.close()
