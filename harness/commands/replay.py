"""`harness replay`: render a goal's record from the ledger alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from harness.commands.session import open_session
from harness.errors import InvalidInput
from harness.record.ledger import Ledger
from harness.record.locate import locate
from harness.record.render import replay_chunks
from harness.store.fsutil import atomic_write

FORMATS = ("text", "md", "json", "html")


def replay(
    cwd: Path, goal_id: str, fmt: str, out_file: Path | None, env: Mapping[str, str], out: BinaryIO
) -> int:
    if fmt not in FORMATS:
        raise InvalidInput(f"--format: {fmt!r} (expected one of {', '.join(FORMATS)})")
    with (
        open_session(cwd, env, [goal_id]) as s,
        locate(s.repo, goal_id, s.control.branch(goal_id)) as found,
    ):
        ledger = Ledger(found.paths.events, goal_id, s.secret.goal_key(goal_id))
        if fmt == "html":
            from harness.record.report.page import render_html

            note = "verified: every event's chain link and MAC checked while rendering"
            chunks: Iterable[bytes] = [render_html(ledger.records(), goal_id, note)]
        else:
            chunks = replay_chunks(ledger.records(), goal_id, fmt)
        if out_file is None:
            for chunk in chunks:
                out.write(chunk)
        else:
            atomic_write(out_file, b"".join(chunks))
    return 0
