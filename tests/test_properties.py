"""Property-based: random and mutated cells, ledger lines and goal files only ever give the
harness's own errors (exit 2 or 3 with a message), never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import TrustFailure
from harness.record.cell import Cell, Spend, cell_bytes, parse_cell
from harness.record.ledger import Ledger
from tests.managed import ManagedFactory

KEY = b"p" * 32
VALID_CELL = cell_bytes(Cell(goal="g1", status="running", limit=Spend(3, 60, 1.0, 9, 9)), KEY)


def _mutate(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    buf = bytearray(data)
    for position, value in edits:
        if buf:
            buf[position % len(buf)] = value
    return bytes(buf)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_as_a_cell_are_refused(data: bytes) -> None:
    try:
        parse_cell(data, "state.json", "g1", KEY)
    except TrustFailure as exc:
        assert str(exc).startswith("state.json: ")
    else:
        raise AssertionError("random bytes were accepted as a cell")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4))
def test_mutated_cells_are_refused_unless_unchanged(edits: list[tuple[int, int]]) -> None:
    data = _mutate(VALID_CELL, edits)
    try:
        parse_cell(data, "state.json", "g1", KEY)
    except TrustFailure:
        return
    assert data == VALID_CELL or data.rstrip() == VALID_CELL.rstrip() or _same_json(data)


def _same_json(data: bytes) -> bool:
    import json

    try:
        return bool(json.loads(data) == json.loads(VALID_CELL))
    except ValueError:
        return False


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 255)), min_size=1, max_size=3)
)
def test_mutated_ledger_lines_are_refused_or_cut(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, int]]
) -> None:
    folder = tmp_path_factory.mktemp("ledger") / "events"
    ledger = Ledger(folder, "g1", KEY)
    ledger.load()
    for i in range(4):
        ledger.append("step.started", "build", i, {"call_id": f"c{i}", "base": "0" * 40}, "t")
    path = folder / "000001.jsonl"
    original = path.read_bytes()
    path.write_bytes(_mutate(original, edits))
    reader = Ledger(folder, "g1", KEY)
    try:
        records = reader.load()
    except TrustFailure as exc:
        assert "000001.jsonl: line " in str(exc)
        return
    if path.read_bytes() != original:
        # Only a change to the last line's newline can read as a torn tail: never an event.
        assert reader.torn is not None and len(records) == 3


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=400))
def test_random_goal_file_through_the_cli_is_exit_2(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    root = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "goals").mkdir()
    (root / "goals" / "g1.yaml").write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "check", "g1"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "goals/g1.yaml" in proc.stdout


def test_named_bad_goals_are_exit_2_through_run(managed: ManagedFactory) -> None:
    from tests.managed import base_goal

    cases = {
        "objective": (base_goal() | {"objective": "x" * 40_000}, "is 40,000 characters long"),
        "budget": (base_goal() | {"budget": {"max_cost_usd": -5}}, "budget.max_cost_usd: -5"),
    }
    repo = managed()
    for goal, message in cases.values():
        repo.commit_goal_change(goal)
        proc = repo.harness("run", check=2)
        assert message in proc.stderr and "Traceback" not in proc.stderr
    (repo.root / "goals" / "g1.yaml").write_bytes(b"\xff\xfe\x00garbage: [")
    import tests.managed as m

    m.git(repo.root, "commit", "-qam", "garbage")
    proc = repo.harness("run", check=2)
    assert "goals/g1.yaml" in proc.stderr and "Traceback" not in proc.stderr
    assert repo.count("build") == []
