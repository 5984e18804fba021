"""Whether a checkout holds exactly the committed bytes.

The owner reviews blobs (`harness diff`, the classifier read what git stores), but a
checkout applies `.gitattributes`: `working-tree-encoding`, `eol`, `text`, `ident` and
`filter` turn the reviewed bytes into others on disk, and the ship step runs those. So the
ship step's fresh checkout is compared with its blobs before the step starts: the files
the goal changed since its base, or every file when the goal changed a `.gitattributes`,
`.gitmodules` or `.lfsconfig` (attributes can change how an untouched file checks out).
Hashed here, in Python, from the bytes on disk, never through git's filters.
"""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from harness.store.gitrepo import run_git

GIT_BEHAVIOUR_FILES = frozenset({".gitattributes", ".gitmodules", ".lfsconfig"})
_REGULAR = (b"100644", b"100755")


def unfaithful_files(checkout: Path, base: str | None) -> list[str]:
    """Regular files of the checkout at `checkout` whose bytes on disk are not their blob
    (a file missing on disk counts). `base`: the goal's base commit (None: every file)."""
    paths = _to_check(checkout, base)
    if paths is not None and not paths:
        return []
    args = ["ls-files", "-s", "-z"]
    if paths is not None:
        args += ["--", *(f":(literal){p}" for p in paths)]
    listing = run_git(args, checkout).stdout
    algo = "sha256" if _object_format(checkout) == "sha256" else "sha1"
    differ = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw = entry.partition(b"\t")
        mode, blob = meta.split(b" ")[:2]
        if mode not in _REGULAR:
            continue  # links are checked out as links, gitlinks not at all
        rel = raw.decode("utf-8", "surrogateescape")
        if _blob_id(checkout / rel, algo) != blob.decode():
            differ.append(rel)
    return differ


def _to_check(checkout: Path, base: str | None) -> list[str] | None:
    if base is None:
        return None
    args = ["diff-tree", "-r", "-z", "--name-only", "--no-renames", base, "HEAD"]
    out = run_git(args, checkout).stdout.decode("utf-8", "surrogateescape")
    changed = [p for p in out.split("\0") if p]
    if any(PurePosixPath(p).name in GIT_BEHAVIOUR_FILES for p in changed):
        return None
    return changed


def _object_format(checkout: Path) -> str:
    out = run_git(["rev-parse", "--show-object-format"], checkout, check=False)
    return out.stdout.decode().strip() or "sha1"


def _blob_id(path: Path, algo: str) -> str | None:
    try:
        data = path.read_bytes()  # a link here (not in the tree) reads as its target: differs
    except OSError:
        return None
    if path.is_symlink():
        return None
    return hashlib.new(algo, b"blob %d\0" % len(data) + data).hexdigest()
