"""`harness replay`: render a goal's record from the ledger alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from harness.control import open_control
from harness.errors import InvalidInput
from harness.fsutil import atomic_write
from harness.gitrepo import Repo
from harness.goal import check_goal_id
from harness.ledger import Ledger
from harness.render import replay_chunks
from harness.secret import load_secret
from harness.workspace import locate

FORMATS = ("text", "md", "json", "html")


def replay(
    cwd: Path, goal_id: str, fmt: str, out_file: Path | None, env: Mapping[str, str], out: BinaryIO
) -> int:
    if fmt not in FORMATS:
        raise InvalidInput(f"--format: {fmt!r} (expected one of {', '.join(FORMATS)})")
    check_goal_id(goal_id, "goal id")
    repo = Repo.discover(cwd)
    secret = load_secret(env, repo.root)
    control = open_control(repo, secret)
    with locate(repo, control, goal_id) as found:
        ledger = Ledger(found.paths.events, goal_id, secret.goal_key(goal_id))
        if fmt == "html":
            from harness.report_html import render_html

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
