"""`harness replay --format/--run/--out` and their bad input, in this process, on the
committed example run (one run)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from harness.commands.demo import DEMO_SECRET, GOAL_ID
from harness.commands.replay import replay
from harness.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | {
    "HARNESS_SECRET": DEMO_SECRET
}


def _replay(fmt: str, run: int | None = None, out_file: Path | None = None) -> bytes:
    out = io.BytesIO()
    assert replay(ROOT, GOAL_ID, fmt, out_file, ENV, out, io.StringIO(), run=run) == 0
    return out.getvalue()


def test_run_one_of_a_one_run_goal_is_the_whole_replay() -> None:
    assert _replay("text", run=1) == _replay("text")


def test_out_writes_the_same_bytes_as_stdout(tmp_path: Path) -> None:
    target = tmp_path / "replay.md"
    assert _replay("md", out_file=target) == b""
    assert target.read_bytes() == _replay("md")


@pytest.mark.parametrize(
    ("fmt", "run", "message"),
    [
        ("yaml", None, "--format: 'yaml' (expected one of text, md, json, html)"),
        ("text", 0, "--run: 0 (expected a run number, 1 or more)"),
        ("html", 1, "--run: the html page shows every run (expected --format text, md or json)"),
        ("json", 2, "--run: 2 (expected a run of the goal: 1 to 1)"),
    ],
)
def test_bad_options_write_nothing(tmp_path: Path, fmt: str, run: int | None, message: str) -> None:
    out, out_file = io.BytesIO(), tmp_path / "replay.out"
    with pytest.raises(InvalidInput) as caught:
        replay(ROOT, GOAL_ID, fmt, out_file, ENV, out, io.StringIO(), run=run)
    assert str(caught.value) == message
    assert out.getvalue() == b"" and not out_file.exists()
