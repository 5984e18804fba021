"""`harness new <id>`: write a commented goal template."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from harness.errors import InvalidInput
from harness.loop.control import OWNERS_PATH
from harness.model.goal import check_goal_id
from harness.store.gitrepo import Repo
from harness.trust.owners import parse_owners

TEMPLATE = """\
# A goal for goal-harness (goal file version 1); every key: docs/specs/goal-file.md.
# Commit this file, then approve it: harness approve {id} --key ~/.ssh/id_ed25519
version: 1
id: {id}
owner: {owner}              # a principal listed in .harness/owners
objective: |
  Say what must be true when this goal is done, and how the judge will show it.
build:                      # the implementing agent; its stdin is the prompt
  run:{run}
  timeout: 30m
  format: {format}{format_note}
judge:                      # the verification; exit 0 means pass
  run: python -m pytest -q
  timeout: 10m
# review:                   # optional, read-only; exit 0 means pass
#   run: ./scripts/review.sh
# plan:                     # optional, read-only; its stdout goes into the first prompt
#   run: ./scripts/plan.sh
# ship:                     # optional; runs only after a signed `harness ship`, in a
#                           # fresh checkout of the signed commit; $HARNESS_SHIP_COMMIT is
#                           # the change alone (no ledger/), one commit on the base
#   run: [sh, -c, 'git push origin "$HARNESS_SHIP_COMMIT:refs/heads/feature/{id}"']
budget:
  max_iterations: 3         # build-judge rounds (first build + repairs)
  max_seconds: 2h           # agent wall time over the goal's life
  max_cost_usd: 20
  max_turns: 300
halt:
  no_progress_passes: 2     # same failing test and same tree this many times: stop
  max_passes: 50            # ceiling on steps over the goal's life
# expect:
#   files: [src/example.py] # must exist at the done gate
"""


# Each agent's command for unattended builds with the tested versions; the guide page
# docs/guide/agents/<agent>.md says why each flag is there. The prompt arrives on stdin
# and in HARNESS_PROMPT_FILE; what is left of the budget in HARNESS_BUDGET_*.
def _shell(*lines: str) -> str:
    """A `run:` list `[sh, -c, <lines joined by spaces>]`, as a folded YAML block."""
    body = "".join(f"\n      {line}" for line in lines)
    return f"\n    - sh\n    - -c\n    - >-{body}"


AGENTS: dict[str, tuple[str, str, str]] = {
    "claude": (
        # acceptEdits lets it edit, --allowedTools Bash lets it run the tests; both work as
        # root, where --dangerously-skip-permissions is refused unless IS_SANDBOX=1.
        _shell(
            "exec claude -p --output-format json",
            "--permission-mode acceptEdits --allowedTools Bash",
            '--max-budget-usd "$HARNESS_BUDGET_COST_USD" --max-turns "$HARNESS_BUDGET_TURNS"',
        ),
        "claude-json",
        "  # cost and turns from total_cost_usd and num_turns",
    ),
    "codex": (
        # --full-auto is gone (codex 0.147); without --sandbox its writes fail silently.
        " codex exec --json --sandbox workspace-write -",
        "codex-jsonl",
        "  # turns and tokens from turn.completed; set `prices` in config",
    ),
    "aider": (
        # No URL fetching, installs, update checks, release notes, analytics or commits, and
        # no .aider* file in the worktree (history to /dev/null; no repo map, no tag cache).
        # --no-git: .git is read-only in the sandbox, and aider writes .git/config at start
        # (its git identity); the harness commits each step itself.
        _shell(
            'exec aider --message-file "$HARNESS_PROMPT_FILE"',
            "--yes-always --no-git --no-auto-commits --no-dirty-commits --no-gitignore",
            "--chat-history-file /dev/null --input-history-file /dev/null --map-tokens 0",
            "--no-detect-urls --disable-playwright --no-check-update --no-show-release-notes",
            "--no-analytics --no-suggest-shell-commands --no-show-model-warnings",
            "--no-stream --no-pretty --no-fancy-input",
        ),
        "aider",
        "  # cost from its `Cost:` lines; name the files to edit at the end of the command",
    ),
    "script": (" ./scripts/agent.sh", "plain", "  # may write cost/turns to $HARNESS_REPORT_FILE"),
}


def new(cwd: Path, goal_id: str, out: TextIO, agent: str = "script") -> int:
    check_goal_id(goal_id, "goal id")
    if agent not in AGENTS:
        raise InvalidInput(f"--agent: {agent!r} (expected one of {', '.join(AGENTS)})")
    root = Repo.discover(cwd).root
    path = root / "goals" / f"{goal_id}.yaml"
    if path.exists():
        raise InvalidInput(f"goals/{goal_id}.yaml: already exists (edit it, or choose another id)")
    path.parent.mkdir(exist_ok=True)
    run, fmt, note = AGENTS[agent]
    text = TEMPLATE.format(
        id=goal_id, owner=_first_owner(root), run=run, format=fmt, format_note=note
    )
    path.write_text(text)
    out.write(
        f"wrote goals/{goal_id}.yaml: edit it, commit it, then `harness approve {goal_id} --key KEY`\n"
    )
    return 0


def _first_owner(root: Path) -> str:
    owners_file = root / OWNERS_PATH
    if owners_file.is_file():
        try:
            owners = parse_owners(owners_file.read_text(), OWNERS_PATH)
        except InvalidInput:
            owners = ()
        if owners:
            return owners[0].principals[0]
    return "you@example.com"
