"""Durable file writes and the project's one canonical JSON form."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from harness.errors import StorageFailure


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

    A failed or short write can leave a torn tail; the reader cuts it back (ledger.py), so
    the previous events stay valid.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.write(fd, line) != len(line):
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _storage_failure(path, exc) from None
