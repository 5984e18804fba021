"""`harness replay`: render a goal's record from the ledger alone."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.commands.remote_goal import goal_ledger, open_reading, page_note
from harness.errors import InvalidInput
from harness.record.ledger import Ledger
from harness.record.render import replay_chunks
from harness.record.runs import checked_run
from harness.store.fsutil import atomic_write

FORMATS = ("text", "md", "json", "html")


def replay(
    cwd: Path,
    goal_id: str,
    fmt: str,
    out_file: Path | None,
    env: Mapping[str, str],
    out: BinaryIO,
    err: TextIO = sys.stderr,
    run: int | None = None,
) -> int:
    if fmt not in FORMATS:
        raise InvalidInput(f"--format: {fmt!r} (expected one of {', '.join(FORMATS)})")
    if run is not None and run < 1:
        raise InvalidInput(f"--run: {run} (expected a run number, 1 or more)")
    if run is not None and fmt == "html":
        raise InvalidInput(
            "--run: the html page shows every run (expected --format text, md or json)"
        )
    with open_reading(cwd, env, [goal_id]) as s, goal_ledger(s, goal_id, err) as (ledger, _):
        _write(ledger, goal_id, fmt, out_file, out, run)
    return 0


def _write(
    ledger: Ledger,
    goal_id: str,
    fmt: str,
    out_file: Path | None,
    out: BinaryIO,
    run: int | None = None,
) -> None:
    if fmt == "html":
        from harness.record.report.page import render_html

        chunks: Iterable[bytes] = [render_html(ledger.records(), goal_id, page_note(ledger))]
    else:
        records = ledger.records()
        if run is not None:
            records = checked_run(records, run)
        chunks = replay_chunks(records, goal_id, fmt, run)
    if out_file is None:
        for chunk in chunks:
            out.write(chunk)
    else:
        atomic_write(out_file, b"".join(chunks))
