"""Human-owned files already parsed and schema-checked, remembered between runs.

YAML parsing and JSON Schema validation cost most of a run that finds nothing to do, and a
good part of a run that does something (PyYAML and jsonschema take ~80 ms to import). An
entry holds the validated mapping for one file's SHA-256 under an HMAC with a key derived
from the secret, so an agent that can write `.git/harness/` cannot plant one: an entry that
does not verify is ignored and the file is parsed again. The MAC also covers what kind of
file it is, the harness's version and the schema's SHA-256, so an entry made before an
upgrade is validated again by the new code. The typed checks after the schema run every
time (architecture.md, "The cache of parsed files").
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import StorageFailure
from harness.store.fsutil import atomic_write, canonical_json, strict_json_loads


@dataclass(frozen=True)
class ParsedCache:
    folder: Path
    key: bytes
    kind: str  # "config" or "goal": the entry's file name and the MAC's label
    schema: str  # the schema file the mapping was validated against (model/schema/)
    max_entry_bytes: int  # a mapping as JSON, with room to spare
    keep: int  # entries of this kind kept, the newest

    def _path(self, data: bytes) -> tuple[Path, str]:
        digest = hashlib.sha256(data).hexdigest()
        return self.folder / f"{self.kind}-{digest}.json", digest

    def _mac(self, digest: str, body: bytes) -> str:
        label = f"goal-harness {self.kind}-cache v1".encode()
        schema = schema_sha256(self.schema).encode()
        signed = b"\x00".join([label, __version__.encode(), schema, digest.encode(), body])
        return hmac.new(self.key, signed, hashlib.sha256).hexdigest()

    def recall(self, data: bytes) -> Mapping[str, Any] | None:
        path, digest = self._path(data)
        stored = _read_entry(path, self.max_entry_bytes)
        if stored is None:
            return None
        try:
            entry = strict_json_loads(stored)
            raw, mac = entry["raw"], entry["mac"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(raw, dict) or not isinstance(mac, str):
            return None
        if not hmac.compare_digest(mac, self._mac(digest, canonical_json(raw))):
            return None
        return raw

    def remember(self, data: bytes, raw: Mapping[str, Any]) -> None:
        try:
            body = canonical_json(raw)
        except (ValueError, TypeError):  # no JSON form (.nan, mixed keys): parsed each time
            return
        if strict_json_loads(body) != raw:
            return
        path, digest = self._path(data)
        entry = {"mac": self._mac(digest, body), "raw": raw}
        try:
            atomic_write(path, canonical_json(entry))
            self._prune()
        except (StorageFailure, OSError):
            return  # only speed is lost

    def _prune(self) -> None:
        entries = self.folder.glob(f"{self.kind}-*.json")
        for old in sorted(entries, key=lambda p: p.stat().st_mtime)[: -self.keep]:
            old.unlink(missing_ok=True)


def _read_entry(path: Path, limit: int) -> bytes | None:
    """A cache entry's bytes, if it is a regular file of sane size. The folder is one the
    agent can write: a FIFO must not hang the run, nor a link to /dev/zero fill memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return handle.read(limit + 1)


@functools.cache
def schema_sha256(name: str) -> str:
    return hashlib.sha256((Path(__file__).parent / "schema" / name).read_bytes()).hexdigest()
