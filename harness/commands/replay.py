"""`harness replay`: render a goal's record from the ledger alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from harness.errors import InvalidInput
from harness.loop.control import open_control
from harness.model.goal import check_goal_id
from harness.record.ledger import Ledger
from harness.record.locate import locate
from harness.record.render import replay_chunks
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo
from harness.trust.secret import load_secret

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
    with locate(repo, goal_id, control.branch(goal_id)) as found:
        ledger = Ledger(found.paths.events, goal_id, secret.goal_key(goal_id))
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
