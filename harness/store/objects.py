"""Reading many git objects at once: one `cat-file --batch` process for many blobs, trees
and commits (`ObjectReader`, `read_blobs`), and the goal branches' heads (`branch_heads`).

Kept apart from `gitrepo` (one git call per process) because these readers keep a process
or parse git's batch output themselves; both use gitrepo's clean environment.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.store.gitrepo import CLEAN_ENV, GitError, run_git, safe_config


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
        found = self.read(spec)
        if found is None or found[1] != "tree":
            return []
        oid_bytes = len(found[0]) // 2
        data, names, offset = found[2], [], 0
        try:
            while offset < len(data):
                space = data.index(b" ", offset)
                nul = data.index(b"\0", space)
                names.append(data[space + 1 : nul].decode("utf-8", "replace"))
                offset = nul + 1 + oid_bytes
        except ValueError:
            raise GitError(f"{spec}: the git tree object is malformed") from None
        if offset != len(data):
            raise GitError(f"{spec}: the git tree object is malformed")
        return names

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
