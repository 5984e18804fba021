"""The whole change a ship decision covers, recorded with the ship gate (issue 30 item 13):
`git diff <base> HEAD -- . ':!ledger'` in the goal's worktree, the diff `harness diff <id>`
prints and `git diff base ship-commit` equals, bounded like a build's diff
(`record/evidence.py`). The HTML report's decision block shows it; a record from before it
was kept has none, and its block only names `harness diff`."""

from __future__ import annotations

from pathlib import Path

from harness.record.evidence import DIFF_BYTES, diff_command, fit_head
from harness.store.gitrepo import run_git


def whole_change(worktree: Path, base: str, goal_id: str) -> dict[str, str]:
    args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", base, "HEAD"]
    text = run_git([*args, "--", ".", ":!ledger"], worktree).stdout
    return {"change": fit_head(text.decode("utf-8", "replace"), DIFF_BYTES, diff_command(goal_id))}
