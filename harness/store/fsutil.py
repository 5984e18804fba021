"""Durable file writes and the project's one canonical JSON form."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from harness import failpoints
from harness.errors import StorageFailure, TrustFailure


def canonical_json(value: Any) -> bytes:
    """Deterministic bytes: sorted keys, no spaces, UTF-8, NaN refused."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def strict_json_loads(data: bytes | str) -> Any:
    """Parse JSON refusing duplicate keys and NaN/Infinity; raises ValueError."""
    return json.loads(data, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)


def _link(path: Path) -> TrustFailure:
    return TrustFailure(f"{path}: is a link; the harness's own files are never links")


def refuse_link(path: Path) -> None:
    """The harness's own files and folders are never links: a link there was planted."""
    if path.is_symlink():
        raise _link(path)
    if path.exists() and not path.is_dir() and not path.is_file():
        raise TrustFailure(f"{path}: is not a regular file or folder")


def read_no_follow(path: Path) -> bytes | None:
    """A regular file's bytes, opened without following a link (None when missing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link(path) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise TrustFailure(f"{path}: is not a regular file")
        return handle.read()


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _storage_failure(path: Path, exc: OSError) -> StorageFailure:
    reason = exc.strerror or str(exc)
    return StorageFailure(f"{path}: cannot write: {reason}; the previous version is intact")


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write via a temp file in the same folder, fsync, replace, fsync the folder."""
    try:
        _atomic_write(path, data, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link(path) from None
        raise _storage_failure(path, exc) from None


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    import tempfile  # ~4 ms to import (shutil, random): only commands that write pay it

    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(folder)


def append_line(path: Path, line: bytes) -> None:
    """Append one complete line in a single write and fsync it.

    A write or fsync that fails cuts the file back to its length before the write (and
    fsyncs that) before the error is raised: after a failed fsync the kernel may hold the
    line in its cache, readable, and never write it, so a later read must not find it and
    build on it (ledger.md, "Reading and torn tails"). A cut that fails too is said.
    """
    try:
        # Never through a link: a planted one would carry event lines anywhere (issue 13).
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link(path) from None
        raise _storage_failure(path, exc) from None
    try:
        size = os.fstat(fd).st_size
        try:
            if os.write(fd, line) != len(line):
                raise OSError(errno.ENOSPC, "short write")
            failpoints.fault("append_fsync")
            os.fsync(fd)
        except OSError as exc:
            raise _cut_back(fd, path, size, exc) from None
    finally:
        os.close(fd)


def _cut_back(fd: int, path: Path, size: int, exc: OSError) -> StorageFailure:
    """The line that did not reach the disk taken off again: the file as it was."""
    reason = exc.strerror or str(exc)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
        if size == 0:  # made for this line: a new segment is never left empty
            path.unlink()
            fsync_dir(path.parent)
    except OSError as again:
        return StorageFailure(
            f"{path}: cannot write: {reason}; cutting the unsynced line off failed too "
            f"({again.strerror or again}): check the disk before running again "
            "(`harness verify` names what the file holds)"
        )
    return StorageFailure(
        f"{path}: cannot write: {reason}; the line was cut off again, the events before it "
        "are intact"
    )
