"""`harness trace --run N` and bad input, on the committed example run (one run)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from harness.commands.demo import DEMO_SECRET, GOAL_ID
from harness.commands.trace import trace
from harness.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | {
    "HARNESS_SECRET": DEMO_SECRET
}


def _trace(run: int | None, out_file: Path | None = None) -> bytes:
    out = io.BytesIO()
    assert trace(ROOT, GOAL_ID, out_file, ENV, out, io.StringIO(), run=run) == 0
    return out.getvalue()


def test_run_one_of_a_one_run_goal_is_the_whole_trace() -> None:
    assert _trace(1) == _trace(None)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (2, "--run: 2 (expected a run of the goal: 1 to 1)"),
        (0, "--run: 0 (expected a run number, 1 or more)"),
    ],
)
def test_a_run_the_goal_does_not_have_writes_nothing(
    tmp_path: Path, run: int, message: str
) -> None:
    out, out_file = io.BytesIO(), tmp_path / "trace.json"
    with pytest.raises(InvalidInput) as caught:
        trace(ROOT, GOAL_ID, out_file, ENV, out, io.StringIO(), run=run)
    assert str(caught.value) == message
    assert out.getvalue() == b"" and not out_file.exists()
