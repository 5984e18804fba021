"""`harness report --all --out DIR`: a static, self-contained site of every goal.

`DIR/index.html` lists every goal with a record (status, gate, waiting since, spend against
limit, last event), each linking `DIR/<id>.html`, the page `harness replay <id> --format
html` prints. Every ledger is verified while it renders; a goal whose record fails is a row
saying why (no page), and the command then exits 3 after writing the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.session import open_session
from harness.commands.verify import goals_with_records
from harness.errors import HarnessError, InvalidInput, TrustFailure
from harness.record.ledger import Ledger
from harness.record.locate import locate
from harness.record.report.index import GoalRow, failed_row, goal_row, render_index
from harness.record.report.page import collect, render_collected
from harness.record.visible import line
from harness.store.fsutil import atomic_write

NOTE = "verified: every event's chain link and MAC checked while rendering"


def report(
    cwd: Path,
    goal_ids: list[str],
    every: bool,
    out_dir: Path | None,
    env: Mapping[str, str],
    out: TextIO,
) -> int:
    if out_dir is None:
        raise InvalidInput("--out: missing (expected the folder to write the site into)")
    if not every and not goal_ids:
        raise InvalidInput("goal ids: none given (expected goal ids, or --all for every goal)")
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInput(f"--out: {out_dir} is a file (expected a folder)")
    with open_session(cwd, env, goal_ids) as s:
        ids = sorted(
            set(goal_ids) | (set(goals_with_records(s.repo, s.control)) if every else set())
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        rows: list[GoalRow] = []
        for goal_id in ids:
            try:
                with locate(s.repo, goal_id, s.control.branch(goal_id)) as found:
                    ledger = Ledger(found.paths.events, goal_id, s.secret.goal_key(goal_id))
                    page = collect(ledger.records(), goal_id)
            except HarnessError as exc:
                rows.append(failed_row(goal_id, str(exc)))
                continue
            atomic_write(out_dir / f"{goal_id}.html", render_collected(page, goal_id, NOTE))
            rows.append(goal_row(page, goal_id, f"{goal_id}.html"))
        atomic_write(out_dir / "index.html", render_index(rows, NOTE))
    failed = [row for row in rows if row.problem]
    out.write(line(f"wrote {out_dir / 'index.html'}: {len(rows)} goal(s)"))
    for row in failed:
        out.write(line(f"FAIL {row.goal_id}: {row.problem}"))
    return TrustFailure.exit_code if failed else 0
