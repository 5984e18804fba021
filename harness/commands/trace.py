"""`harness trace`: a goal's record as OpenTelemetry spans (OTLP/JSON), from the ledger alone."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.commands.remote_goal import goal_ledger, open_reading
from harness.errors import InvalidInput
from harness.record.otlp import otlp_json
from harness.record.runs import checked_run
from harness.record.trace import spans
from harness.store.fsutil import atomic_write


def trace(
    cwd: Path,
    goal_id: str,
    out_file: Path | None,
    env: Mapping[str, str],
    out: BinaryIO,
    err: TextIO = sys.stderr,
    run: int | None = None,
) -> int:
    """The whole ledger is read and checked before a byte is written: a broken record
    (exit 3) leaves stdout empty and `--out` as it was."""
    if run is not None and run < 1:
        raise InvalidInput(f"--run: {run} (expected a run number, 1 or more)")
    with open_reading(cwd, env, [goal_id]) as s, goal_ledger(s, goal_id, err) as (ledger, _):
        records = ledger.records()
        if run is not None:
            records = checked_run(records, run)
        document = otlp_json(list(spans(records, goal_id, run)), goal_id)
    if out_file is None:
        out.write(document)
    else:
        atomic_write(out_file, document)
    return 0
