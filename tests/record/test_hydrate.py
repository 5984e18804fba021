"""hydrate.load on a real goal record: a clean load, roll-forward, a torn tail cut back, and
each refusal (exit 3) with its exact message and every byte left as it was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import TrustFailure
from harness.record.cell import parse_cell
from harness.record.hydrate import Committed, GoalPaths, committed_view, load
from harness.record.ledger import TornTail
from tests.inprocess import InProcess
from tests.managed import ManagedRepo, git

SEGMENT = "ledger/g1/events/000001.jsonl"
CELL = "ledger/g1/state.json"


@pytest.fixture
def here(managed: Callable[..., ManagedRepo]) -> InProcess:
    """g1 completed in seven events; `early.json` beside the repository holds the cell
    (and `early.jsonl` the ledger) as committed after the first build (event 3)."""
    here = InProcess(managed(mode="fix-on-1"))
    here.advance(max_steps=1)
    (here.repo.root.parent / "early.json").write_bytes(here.paths.cell.read_bytes())
    (here.repo.root.parent / "early.jsonl").write_bytes((here.repo.worktree / SEGMENT).read_bytes())
    assert here.advance().status == "completed"
    return here


def _early(here: InProcess, suffix: str) -> bytes:
    return (here.repo.root.parent / f"early{suffix}").read_bytes()


def _files(here: InProcess) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(here.paths.folder.rglob("*")) if p.is_file()}


def _commit(here: InProcess) -> None:
    git(here.repo.worktree, "commit", "-qam", "put back")


def test_clean_record_loads_as_its_cell(here: InProcess) -> None:
    loaded = load(here.paths, here.key, committed_view(here.paths), repair=True)
    assert loaded.cell == parse_cell(here.paths.cell.read_bytes(), CELL, "g1", here.key)
    assert (loaded.cell.status, loaded.cell.position.seq) == ("completed", 7)
    assert (loaded.events, loaded.rolled_forward, loaded.torn) == (7, 0, None)
    assert loaded.ledger.head == loaded.cell.position
    assert loaded.report.render(loaded.cell) == here.paths.report.read_text()
    quick = load(here.paths, here.key, committed_view(here.paths), repair=False, full_fold=False)
    assert quick.cell == loaded.cell


def _older_cell(here: InProcess) -> None:
    here.paths.cell.write_bytes(_early(here, ".json"))


def _older_cell_committed(here: InProcess) -> None:
    _older_cell(here)
    _commit(here)


def _older_record_committed(here: InProcess) -> None:
    _older_cell(here)
    (here.repo.worktree / SEGMENT).write_bytes(_early(here, ".jsonl"))
    _commit(here)


def _last_line_cut(here: InProcess) -> None:
    segment = here.repo.worktree / SEGMENT
    segment.write_bytes(b"".join(segment.read_bytes().splitlines(keepends=True)[:-1]))


def _cell_edited(here: InProcess) -> None:
    here.paths.cell.write_bytes(here.paths.cell.read_bytes().replace(b'"completed"', b'"running"'))


def _older_cell_and_torn_tail(here: InProcess) -> None:
    _older_cell(here)
    with (here.repo.worktree / SEGMENT).open("ab") as handle:
        handle.write(b'{"v":1,"seq":8,')


@pytest.mark.parametrize(
    ("damage", "committed", "message"),
    [
        (_older_cell, True, f"{CELL}: the cell names event 3 but events up to 7 are committed: an older cell was put back (rollback)"),
        (_older_cell_and_torn_tail, True, f"{CELL}: the cell names event 3 but events up to 7 are committed: an older cell was put back (rollback)"),
        (_older_cell_committed, True, f"{CELL}: the committed cell names event 3 but the committed ledger ends at 7"),
        (_older_record_committed, True, f"{CELL}: an earlier commit holds a cell at event 7 but the committed ledger ends at 3: an older ledger was committed over a newer one (rollback)"),
        (_last_line_cut, False, f"{CELL}: the cell names event 7 but the ledger ends at 6: the ledger was cut"),
        (_cell_edited, True, f"{CELL}: the cell's MAC does not match: the cell was edited or moved, or the secret is wrong"),
    ],
)  # fmt: skip
def test_refusal_names_the_problem_and_changes_no_byte(
    here: InProcess, damage: Callable[[InProcess], None], committed: bool, message: str
) -> None:
    damage(here)
    before = _files(here)
    view = committed_view(here.paths) if committed else None
    with pytest.raises(TrustFailure) as caught:
        load(here.paths, here.key, view, repair=True)
    assert str(caught.value) == message
    assert _files(here) == before


def test_cut_committed_events_are_refused_by_size(here: InProcess) -> None:
    segment = here.repo.worktree / SEGMENT
    committed = segment.stat().st_size
    _last_line_cut(here)
    cut = segment.stat().st_size
    before = _files(here)
    with pytest.raises(TrustFailure) as caught:
        load(here.paths, here.key, committed_view(here.paths), repair=True)
    assert str(caught.value) == (
        f"{SEGMENT}: shorter than committed ({cut} < {committed} bytes): committed events were cut"
    )
    assert _files(here) == before


def test_events_after_the_cells_position_roll_forward(here: InProcess) -> None:
    """A crash between a ledger append and the cell write: the MAC'd events are folded on."""
    cell_bytes = here.paths.cell.read_bytes()
    ledger = load(here.paths, here.key, committed_view(here.paths), repair=True).ledger
    data = {"status": "needs_attention", "reason": "tamper", "detail": "x", "commit": "c" * 40}
    ledger.append("goal.gated", None, 1, data, here.clock.now())
    ledger.append("goal.resumed", None, 1, {"runner": ""}, here.clock.now())
    again = load(here.paths, here.key, committed_view(here.paths), repair=True)
    assert (again.rolled_forward, again.events, again.cell.position) == (2, 9, ledger.head)
    assert (again.cell.status, again.cell.gate, again.cell.gate_detail) == (
        "needs_attention",
        "tamper",
        "x",
    )
    assert again.cell.gate_commit == "c" * 40
    assert here.paths.cell.read_bytes() == cell_bytes  # loading never writes the cell


def test_torn_last_line_is_cut_back_only_when_repairing(here: InProcess) -> None:
    segment = here.repo.worktree / SEGMENT
    whole = segment.read_bytes()
    segment.write_bytes(whole + b'{"v":1,"seq":8,')
    torn = TornTail(segment, len(whole), 15)
    looked = load(here.paths, here.key, committed_view(here.paths), repair=False)
    assert (looked.torn, looked.cell.status) == (torn, "completed")
    assert segment.read_bytes() == whole + b'{"v":1,"seq":8,'
    repaired = load(here.paths, here.key, committed_view(here.paths), repair=True)
    assert (repaired.torn, repaired.events) == (torn, 7)
    assert segment.read_bytes() == whole
    assert load(here.paths, here.key, committed_view(here.paths), repair=True).torn is None


def test_committed_view_reads_head_and_the_previous_cell(here: InProcess, tmp_path: Path) -> None:
    view = committed_view(here.paths)
    assert view is not None and view.previous is not None
    assert view.cell == here.paths.cell.read_bytes()
    assert view.sizes == {"000001.jsonl": (here.repo.worktree / SEGMENT).stat().st_size}
    assert parse_cell(view.previous, CELL, "g1", here.key).position.seq == 6
    assert committed_view(here.paths, history=False) == Committed(view.cell, view.sizes)
    assert committed_view(GoalPaths(tmp_path, "g1")) is None  # not a git checkout


def test_the_committed_example_written_before_cells_kept_a_time_still_loads(
    tmp_path: Path,
) -> None:
    """ledger/fix-calc-add was written before cells kept `advanced_at` and `stale_after_s`
    (issue 17): it loads and verifies, and its folded cell then carries the time."""
    import shutil

    from harness.commands.demo import DEMO_SECRET, GOAL_ID
    from harness.trust.secret import Secret

    committed = Path(__file__).resolve().parents[2] / "ledger" / GOAL_ID
    shutil.copytree(committed, tmp_path / "ledger" / GOAL_ID)
    paths = GoalPaths(tmp_path, GOAL_ID)
    key = Secret(DEMO_SECRET.encode()).goal_key(GOAL_ID)
    before = parse_cell(paths.cell.read_bytes(), "state.json", GOAL_ID, key)
    assert (before.advanced_at, before.stale_after_s) == (None, None)
    loaded = load(paths, key, None, repair=False, report=False)
    assert loaded.cell.advanced_at is not None and loaded.cell.status == "parked_at_eyes"


def test_the_committed_example_has_none_of_the_run_fields_and_folds_to_their_defaults(
    tmp_path: Path,
) -> None:
    """ledger/fix-calc-add was written before recurring goals (issue 17): its cell has no
    `run` … `lifetime_used`, reads them as their defaults, and equals the fold of its
    ledger, which gives a one-shot goal exactly those defaults."""
    import json
    import shutil

    from harness.commands.demo import DEMO_SECRET, GOAL_ID
    from harness.trust.secret import Secret

    committed = Path(__file__).resolve().parents[2] / "ledger" / GOAL_ID
    shutil.copytree(committed, tmp_path / "ledger" / GOAL_ID)
    paths = GoalPaths(tmp_path, GOAL_ID)
    raw = json.loads(paths.cell.read_bytes())
    new = {"run", "run_started_at", "run_base", "run_ended", "every_s", "lifetime_limit"}
    assert not (new | {"lifetime_used"}) & raw.keys()
    key = Secret(DEMO_SECRET.encode()).goal_key(GOAL_ID)
    loaded = load(paths, key, None, repair=False, report=False)
    cell = loaded.cell
    assert (cell.run, cell.run_started_at, cell.run_base, cell.run_ended) == (1, None, None, None)
    assert (cell.every_s, cell.lifetime_limit, cell.lifetime_used) == (None, None, None)
