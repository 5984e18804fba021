"""`harness report --all --out DIR`: a static, self-contained site of every goal.

`DIR/index.html` lists every goal with a record (status, gate, waiting since, spend against
limit, last event), each linking `DIR/<id>.html`, the page `harness replay <id> --format
html` prints. Every ledger is verified while it renders; a goal whose record fails is a row
saying why (no page), and the command then exits 3 after writing the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.remote_goal import (
    UNVERIFIED_NOTE,
    VERIFIED_NOTE,
    open_reading,
    page_note,
    reading_ledger,
)
from harness.commands.reviewer import remote_goal_branches
from harness.commands.verify import goals_with_records
from harness.errors import HarnessError, InvalidInput, TrustFailure
from harness.record.locate import locate
from harness.record.report.index import GoalRow, failed_row, goal_row, render_index
from harness.record.report.page import collect, render_collected
from harness.record.visible import line
from harness.store.fsutil import atomic_write

SIGNED_NOTE = "verified by the listed runners' signatures, each page says whose (no secret here)"


def report(
    cwd: Path,
    goal_ids: list[str],
    every: bool,
    out_dir: Path | None,
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO = sys.stderr,
) -> int:
    """Without the secret (a reviewer clone) every page is rendered from its chain-checked
    ledger and says it is unverified; a broken chain is still a failed row."""
    if out_dir is None:
        raise InvalidInput("--out: missing (expected the folder to write the site into)")
    if not every and not goal_ids:
        raise InvalidInput("goal ids: none given (expected goal ids, or --all for every goal)")
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInput(f"--out: {out_dir} is a file (expected a folder)")
    with open_reading(cwd, env, goal_ids) as s:
        remote = remote_goal_branches(s.repo, s.control.config.branch_prefix)
        ids = sorted(
            set(goal_ids)
            | (set(goals_with_records(s.repo, s.control)) | set(remote) if every else set())
        )
        if s.secret is not None:
            note = VERIFIED_NOTE
        else:
            note = SIGNED_NOTE if s.control.runners() is not None else UNVERIFIED_NOTE
        out_dir.mkdir(parents=True, exist_ok=True)
        rows: list[GoalRow] = []
        for goal_id in ids:
            try:
                branch = s.control.branch(goal_id)
                with locate(s.repo, goal_id, branch, remote.get(goal_id)) as found:
                    ledger = reading_ledger(s.control, found.paths, s.secret, err)
                    page = collect(ledger.records(), goal_id)
            except HarnessError as exc:
                rows.append(failed_row(goal_id, str(exc)))
                continue
            page_html = render_collected(page, goal_id, page_note(ledger))
            atomic_write(out_dir / f"{goal_id}.html", page_html)
            rows.append(goal_row(page, goal_id, f"{goal_id}.html"))
        atomic_write(out_dir / "index.html", render_index(rows, note))
    failed = [row for row in rows if row.problem]
    out.write(line(f"wrote {out_dir / 'index.html'}: {len(rows)} goal(s)"))
    for row in failed:
        out.write(line(f"FAIL {row.goal_id}: {row.problem}"))
    return TrustFailure.exit_code if failed else 0
