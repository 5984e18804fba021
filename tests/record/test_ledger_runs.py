"""The ledger's run numbers (issue 17): an event of run N ≥ 2 carries `run: N`, and only
a `run.started` opens the next run. Lines are forged with the right MAC, so only the run
check can refuse them."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.record.ledger import Ledger, LedgerBroken
from harness.store.fsutil import canonical_json

KEY = b"k" * 32
RUN_2 = {"run": 2, "control_commit": "c" * 40, "due_at": "2030-01-01T00:00:02.000Z"}


def _ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger(tmp_path / "events", "g1", KEY)
    ledger.load()
    return ledger


def _two_runs(tmp_path: Path) -> Ledger:
    ledger = _ledger(tmp_path)
    ledger.append("goal.completed", None, 1, {"commit": "a" * 40}, "t1")
    ledger.append("run.started", None, 1, RUN_2, "t2")
    ledger.append("goal.completed", None, 1, {"commit": "b" * 40}, "t3")
    return ledger


def _forge(tmp_path: Path, **changes: Any) -> None:
    """Append one line after the last with a valid MAC and chain: `changes` to its event."""
    segment = tmp_path / "events" / "000001.jsonl"
    lines = segment.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])["e"]
    event = {
        "v": 1,
        "seq": last["seq"] + 1,
        "ts": "t9",
        "type": "goal.completed",
        "goal": "g1",
        "step": None,
        "iter": 1,
        "data": {"commit": "f" * 40},
        "prev": hashlib.sha256(lines[-1]).hexdigest(),
    } | changes
    event = {k: v for k, v in event.items() if v is not DROP}
    body = canonical_json(event)
    mac = hmac.new(KEY, b"harness-event\x00" + body, hashlib.sha256).hexdigest()
    with segment.open("ab") as handle:
        handle.write(b'{"e":' + body + b',"mac":"' + mac.encode() + b'"}\n')


DROP = object()


def test_events_of_run_2_carry_it_and_read_back(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    ledger = _ledger(tmp_path)
    runs = [(r.event.type, r.event.run) for r in ledger.load()]
    assert runs == [("goal.completed", 1), ("run.started", 2), ("goal.completed", 2)]
    assert ledger.run == 2
    lines = (tmp_path / "events" / "000001.jsonl").read_text().splitlines()
    assert '"run"' not in json.loads(lines[0])["e"]
    assert json.loads(lines[2])["e"]["run"] == 2


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"run": 1}, "is not a whole number ≥ 2"),
        ({"run": True}, "is not a whole number ≥ 2"),
        ({"run": "2"}, "is not a whole number ≥ 2"),
        ({"run": 3}, "event of run 3 inside run 2"),
        ({"run": DROP}, "event of run 1 inside run 2"),
        ({"type": "run.started", "data": RUN_2 | {"run": 4}, "run": 4}, "must open run 3"),
        ({"type": "run.started", "data": RUN_2, "run": 2}, "must open run 3"),
        ({"type": "run.started", "data": RUN_2 | {"run": 3}, "run": 2}, "must open run 3"),
        ({"stray": 1}, "holds field\\(s\\) this goal-harness does not know \\(stray\\)"),
        ({"prev": DROP}, "does not have the ledger's fields"),
    ],
)
def test_a_run_number_that_does_not_follow_on_is_a_broken_ledger(
    tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    _two_runs(tmp_path)
    _forge(tmp_path, **({"run": 2} | changes))
    with pytest.raises(LedgerBroken, match=problem) as caught:
        _ledger(tmp_path)
    assert caught.value.line == 4


def test_a_run_2_event_in_run_1_is_a_broken_ledger(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    ledger.append("goal.completed", None, 1, {"commit": "a" * 40}, "t1")
    _forge(tmp_path, run=2)
    with pytest.raises(LedgerBroken, match="event of run 2 inside run 1"):
        _ledger(tmp_path)


def test_the_writer_opens_only_the_next_run(tmp_path: Path) -> None:
    ledger = _two_runs(tmp_path)
    with pytest.raises(HarnessError, match="must open run 3"):
        ledger.append("run.started", None, 1, RUN_2, "t4")


def test_run_3_follows_run_2(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    _forge(tmp_path, type="run.started", data=RUN_2 | {"run": 3}, run=3)
    assert _ledger(tmp_path).run == 3
