"""Durable writes: a failing disk leaves the previous state valid and says so clearly."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from harness.commands.run import run
from harness.errors import StorageFailure
from harness.store import fsutil
from harness.store.fsutil import append_line, atomic_write, canonical_json, strict_json_loads
from tests.managed import ManagedFactory


def test_atomic_write_replaces_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cell.json"
    atomic_write(path, b"old\n")

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", lambda fd: full(fd, b""))
    with pytest.raises(StorageFailure, match=r"cell\.json: cannot write: No space left on device"):
        atomic_write(path, b"new\n")
    assert path.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["cell.json"]


def test_append_line_reports_a_short_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "000001.jsonl"
    append_line(path, b"one\n")
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:2]))
    with pytest.raises(StorageFailure, match="short write"):
        append_line(path, b"two\n")
    assert path.read_bytes() == b"one\ntw"  # a torn tail, which the ledger reader cuts back


def test_canonical_json_and_strict_loads() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
    for bad in (b'{"a":1,"a":2}', b'{"a":NaN}', b'{"a":Infinity}'):
        with pytest.raises(ValueError):
            strict_json_loads(bad)


def test_disk_full_during_a_run_keeps_the_record_valid(
    managed: ManagedFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = managed()
    real = fsutil._atomic_write
    calls = {"n": 0}

    def fail_on_the_second_cell(path: Path, data: bytes, mode: int) -> None:
        # The cell of the second checkpoint (the cache entries of parsed files come first).
        calls["n"] += path.name == "state.json"
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, mode)

    monkeypatch.setattr(fsutil, "_atomic_write", fail_on_the_second_cell)
    out, err = io.StringIO(), io.StringIO()
    assert run(repo.root, [], None, None, repo.env, out=out, err=err) == 1
    assert "state.json: cannot write: No space left on device" in err.getvalue()
    monkeypatch.setattr(fsutil, "_atomic_write", real)
    repo.harness("verify", check=0)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "2"]
