"""`harness verify` names the first bad place, and passes an untouched record."""

from __future__ import annotations

import pytest

from tests.managed import ManagedFactory, ManagedRepo, git

SEGMENT = "ledger/g1/events/000001.jsonl"


@pytest.fixture
def finished(managed: ManagedFactory) -> ManagedRepo:
    repo = managed()
    repo.harness("run", check=0)
    return repo


def _lines(repo: ManagedRepo) -> list[bytes]:
    return (repo.worktree / SEGMENT).read_bytes().splitlines(keepends=True)


def _write(repo: ManagedRepo, lines: list[bytes]) -> None:
    (repo.worktree / SEGMENT).write_bytes(b"".join(lines))


def test_untouched_ledger_verifies(finished: ManagedRepo) -> None:
    out = finished.harness("verify", check=0).stdout
    assert out.startswith("ok g1: 10 events, head 10:")


def test_edited_event_is_named(finished: ManagedRepo) -> None:
    lines = _lines(finished)
    lines[2] = lines[2].replace(b'"exit_code":0', b'"exit_code":7')
    _write(finished, lines)
    out = finished.harness("verify", check=3).stdout
    assert "000001.jsonl: line 3: MAC does not match" in out


def test_deleted_event_is_named(finished: ManagedRepo) -> None:
    lines = _lines(finished)
    del lines[2]
    _write(finished, lines)
    out = finished.harness("verify", check=3).stdout
    assert "000001.jsonl: line 3 (event 4): sequence 4 follows 2" in out


def test_swapped_events_are_named(finished: ManagedRepo) -> None:
    lines = _lines(finished)
    lines[4], lines[5] = lines[5], lines[4]
    _write(finished, lines)
    out = finished.harness("verify", check=3).stdout
    assert "000001.jsonl: line 5 (event 6): sequence 6 follows 4" in out


def test_clean_cut_of_committed_lines_is_named(finished: ManagedRepo) -> None:
    _write(finished, _lines(finished)[:-2])
    out = finished.harness("verify", check=3).stdout
    assert "shorter than committed" in out


def test_edited_cell_is_refused(finished: ManagedRepo) -> None:
    cell = finished.ledger_dir / "state.json"
    cell.write_bytes(cell.read_bytes().replace(b'"iterations":2', b'"iterations":0', 1))
    out = finished.harness("verify", check=3).stdout
    assert "ledger/g1/state.json: the cell's MAC does not match" in out


def test_older_cell_put_back_is_refused(finished: ManagedRepo) -> None:
    older = git(finished.worktree, "show", "HEAD~3:ledger/g1/state.json")
    (finished.ledger_dir / "state.json").write_text(older + "\n")
    out = finished.harness("verify", check=3).stdout
    assert "an older cell was put back (rollback)" in out


def test_older_cell_committed_is_refused(finished: ManagedRepo) -> None:
    older = git(finished.worktree, "show", "HEAD~3:ledger/g1/state.json")
    (finished.ledger_dir / "state.json").write_text(older + "\n")
    git(finished.worktree, "commit", "-qam", "roll back the cell")
    out = finished.harness("verify", check=3).stdout
    assert "the committed cell names event" in out


def test_torn_tail_is_reported_not_failed_and_run_cuts_it(finished: ManagedRepo) -> None:
    path = finished.worktree / SEGMENT
    path.write_bytes(path.read_bytes() + b'{"e":{"v":1,"seq"')
    out = finished.harness("verify", check=0).stdout
    assert "torn last line of 17 bytes" in out
    finished.harness("run", check=0)
    assert not path.read_bytes().endswith(b'"seq"')
