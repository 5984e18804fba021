"""An older goal-harness meeting a record a newer one wrote (issue 30, item 12): every command
that reads it refuses with exit 3 naming the file and saying "written by a newer goal-harness
(format N): upgrade", never "malformed" or a MAC mismatch, and changes nothing
(record/formats.py; cell.md and ledger.md, "Format versions")."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.attacks import forge
from tests.managed import SECRET, ManagedFactory, ManagedRepo

CELL = "ledger/g1/state.json"
SEGMENT = "ledger/g1/events/000001.jsonl"
KEY = forge.goal_key(SECRET, "g1")


def _newer_cell(repo: ManagedRepo) -> str:
    """The cell as a format 2 harness writes it: version 2 in the field and in its MAC."""
    path = repo.ledger_dir / "state.json"
    path.write_bytes(
        forge.cell_with_mac(forge.cell_fields(path.read_bytes()) | {"v": 2}, KEY, "g1")
    )
    return "state.json: written by a newer goal-harness (format 2): upgrade"


def _cell_with_a_new_field(repo: ManagedRepo) -> str:
    """A format 1 cell with a field a later release added, MAC'd as that release does."""
    path = repo.ledger_dir / "state.json"
    fields = forge.cell_fields(path.read_bytes()) | {"checkpoint_sig": "x"}
    path.write_bytes(forge.cell_with_mac(fields, KEY, "g1"))
    return (
        "state.json: holds cell field(s) this goal-harness does not know (checkpoint_sig): "
        "written by a newer goal-harness (format 1): upgrade"
    )


def _newer_line(repo: ManagedRepo) -> str:
    """One more event, chained and MAC'd, in format 2."""
    path = repo.worktree / SEGMENT
    lines = path.read_bytes().splitlines(keepends=True)
    last = forge.event_of(lines[-1])
    event = last | {"v": 2, "seq": last["seq"] + 1, "prev": forge.line_hash(lines[-1])}
    path.write_bytes(b"".join(lines) + forge.ledger_line(event, KEY))
    return (
        f"000001.jsonl: line {len(lines) + 1}: written by a newer goal-harness (format 2): upgrade"
    )


CELL_READERS = [("verify",), ("run",), ("status",)]
LEDGER_READERS = [("verify",), ("run",), ("replay", "g1")]


@pytest.mark.parametrize(
    ("newer", "readers"),
    [
        (_newer_cell, CELL_READERS),
        (_cell_with_a_new_field, CELL_READERS),
        (_newer_line, LEDGER_READERS),
    ],
)
def test_a_record_a_newer_harness_wrote_is_named_so_by_every_reader(
    managed: ManagedFactory, newer: Callable[[ManagedRepo], str], readers: list[tuple[str, ...]]
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", "--max-steps", "2", check=0)  # mid-run: `run` loads the whole record
    expected = newer(repo)
    before = repo.snapshot()
    for command in readers:
        refused = repo.harness(*command, check=3)
        [line] = (refused.stderr or refused.stdout).splitlines()  # verify: on stdout
        assert expected in line and "malformed" not in line, (command, line)
    assert repo.snapshot() == before  # nothing was cut, rolled forward or rewritten
