"""Durable writes: a failing disk leaves the previous state valid and says so clearly."""

from __future__ import annotations

import errno
import io
import os
import stat
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


def test_append_line_cuts_a_short_write_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "000001.jsonl"
    append_line(path, b"one\n")
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:2]))
    with pytest.raises(StorageFailure, match="short write; the line was cut off again"):
        append_line(path, b"two\n")
    assert path.read_bytes() == b"one\n"


def _eio(fd: int) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_a_failed_fsync_cuts_the_line_off_and_syncs_the_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed fsync may leave the line readable in the page cache and never on disk: it is
    taken off again, and the cut itself synced, before the error is raised. (EIO from a
    disk cannot be produced here; tests/e2e/test_append_fault.py uses the fault point.)"""
    path = tmp_path / "000001.jsonl"
    append_line(path, b"one\n")
    real_fsync, synced = os.fsync, []

    def fsync(fd: int) -> None:  # the line's fsync fails; the cut's (back at 4 bytes) works
        synced.append(os.fstat(fd).st_size)
        _eio(fd) if synced[-1] > 4 else real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(StorageFailure, match="Input/output error; the line was cut off again"):
        append_line(path, b"two\n")
    assert path.read_bytes() == b"one\n"
    assert synced == [8, 4]
    new = tmp_path / "000002.jsonl"

    def line_fsync(fd: int) -> None:  # a file's fsync fails while it holds bytes
        held = os.fstat(fd)
        _eio(fd) if stat.S_ISREG(held.st_mode) and held.st_size else real_fsync(fd)

    monkeypatch.setattr(os, "fsync", line_fsync)
    with pytest.raises(StorageFailure, match="cut off again"):
        append_line(new, b"first\n")
    assert not new.exists()  # a segment made for the line is not left behind empty


def test_a_cut_that_fails_too_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "000001.jsonl"
    append_line(path, b"one\n")
    monkeypatch.setattr(os, "fsync", _eio)
    monkeypatch.setattr(os, "ftruncate", lambda fd, size: _eio(fd))
    with pytest.raises(StorageFailure) as caught:
        append_line(path, b"two\n")
    assert str(caught.value) == (
        f"{path}: cannot write: Input/output error; cutting the unsynced line off failed too "
        "(Input/output error): check the disk before running again (`harness verify` names what "
        "the file holds)"
    )


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
