"""Reading many git objects at once: one `cat-file --batch` process for many blobs, trees
and commits (`ObjectReader`, `read_blobs`), and the goal branches' heads (`branch_heads`).

Kept apart from `gitrepo` (one git call per process) because these readers keep a process
or parse git's batch output themselves; both use gitrepo's clean environment.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.store import catfile
from harness.store.gitenv import CLEAN_ENV, git_reason, named_objects
from harness.store.gitrepo import (
    run_git,
    safe_config,
)


class ObjectReader(catfile.ObjectReader):
    """`catfile.ObjectReader` with the options every harness git call gets."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, safe_config())


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
    return branches(repo_root, prefix)[0]


def branches(repo_root: Path, prefix: str) -> tuple[dict[str, str], set[str]]:
    """`branch_heads`, and the names of the broken branches git skipped (a ref file that is
    empty or not an object id): from the same git process, which warns of each."""
    listed = run_git(
        ["for-each-ref", "--format=%(refname:short) %(objectname)", f"refs/heads/{prefix}"],
        repo_root,
    )
    out, said = listed.stdout.decode(), listed.stderr.decode("utf-8", "replace")
    heads = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    broken = {m[1] for m in _BROKEN_REF.finditer(said)}
    return heads, broken


_BROKEN_REF = re.compile(r"^warning: ignoring broken ref refs/heads/(\S+)$", re.MULTILINE)


MISSING = "is missing (deleted)"


def ref_trouble(root: Path, ref: str) -> str | None:
    """Why `ref` names no commit, as words after its name: missing (deleted, or never made),
    broken (an empty or garbled ref file), or naming an object git cannot read; None when
    it names one. One git process; for-each-ref says which, where rev-parse only fails."""
    # Its type too: git then reads the object, and says when it cannot.
    form = "--format=%(objectname) %(objecttype)"
    listed = run_git(["for-each-ref", form, ref], root, check=False)
    said = listed.stderr.decode("utf-8", "replace")
    if "broken ref" in said:
        return "is broken (its ref is empty or not a commit id, as a power cut can leave it)"
    if listed.returncode != 0:
        return f"names a commit git cannot read ({git_reason(said)})"
    return None if listed.stdout.strip() else MISSING


def restore_hint(branch: str, trouble: str, last: str | None) -> str:
    """How to put a lost goal branch back without a remote: at `last` (the commit the
    worktree's HEAD log names, when git still has it), else at a commit to be found."""
    at = last or "<commit>"
    first = f"`rm .git/refs/heads/{branch}`, then " if trouble.startswith("is broken") else ""
    found = "" if last else " (`git fsck --lost-found` lists the commits no branch holds)"
    return (
        f"put the branch back with {first}`git update-ref refs/heads/{branch} {at}`{found}, "
        "or fetch it from a remote or another clone"
    )


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
        import tempfile  # verify's only (with shutil, bz2, lzma: ~3 ms off every other run)

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
                start_new_session=True,  # as catfile's reader: a stop is the run's to handle
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
