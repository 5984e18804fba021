"""`harness new <id>`: write a commented goal template; `--lesson NAME`, a lesson template."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from harness.errors import InvalidInput, invalid
from harness.loop.control import OWNERS_PATH
from harness.model.goalid import GOAL_ID_EXPECTED, GOAL_ID_RE, check_goal_id
from harness.model.wording import show_value
from harness.record.visible import line
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
  format: {format}{format_note}{network}
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


LESSON_TEMPLATE = """\
# A lesson for goal-harness (lesson file version 1); every key: docs/guide/lessons.md.
# A build whose goal objective or failing test matches `when` is told `text`. Lessons are
# read from the control branch, like goals: commit this file there. They need no approval
# and `check.run` runs a command: only people trusted to change a judge should edit them.
version: 1
when:
  # Whole words or phrases, any case; any one matching is enough.
  keywords: [{keyword}]
  # Python regular expressions, case-insensitive, searched in the objective and test id.
  # patterns: ['test_\\w*{stem}']
text: |
  What the build agent should be told: what went wrong before, and how to do it right.
# Optional: at the done gate, exit 0 shows the repository applies the lesson.
# check:
#   run: python scripts/check_{stem}.py
#   timeout: 2m
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


# Each agent's model API, the one host its template lets its build reach (through the
# harness's proxy; docs/specs/sandbox.md, "Egress by name"). aider reaches whichever
# provider its model is from: OpenAI's by the template, another provider's host instead.
API_HOSTS: dict[str, str] = {
    "claude": "api.anthropic.com",
    "codex": "api.openai.com",
    "aider": "api.openai.com",
}
NETWORK = """
  # Its model API only, reached through the harness's proxy (needs the sandbox); to add a
  # package index or another host: docs/guide/agents/{agent}.md
  network:
    allow: [{host}]"""


def new(
    cwd: Path, goal_id: str | None, out: TextIO, agent: str = "script", lesson: str | None = None
) -> int:
    if lesson is not None:
        if goal_id is not None:
            raise InvalidInput(
                f"--lesson: given with goal id {goal_id!r} (expected a goal id or --lesson NAME)"
            )
        return new_lesson(cwd, lesson, out)
    if goal_id is None:
        raise InvalidInput("harness new: no goal id (expected `harness new <id>` or --lesson NAME)")
    check_goal_id(goal_id, "goal id")
    if agent not in AGENTS:
        raise InvalidInput(f"--agent: {agent!r} (expected one of {', '.join(AGENTS)})")
    root = Repo.discover(cwd).root
    path = root / "goals" / f"{goal_id}.yaml"
    if path.exists():
        raise InvalidInput(f"goals/{goal_id}.yaml: already exists (edit it, or choose another id)")
    path.parent.mkdir(exist_ok=True)
    run, fmt, note = AGENTS[agent]
    host = API_HOSTS.get(agent)
    network = NETWORK.format(host=host, agent=agent) if host else ""
    text = TEMPLATE.format(
        id=goal_id, owner=_first_owner(root), run=run, format=fmt, format_note=note, network=network
    )
    path.write_text(text)
    script = root / "scripts" / "agent.sh"
    if agent == "script" and not script.exists():
        script.parent.mkdir(exist_ok=True)
        script.write_text(SCRIPT_STUB)
        script.chmod(0o755)
        out.write(line("wrote scripts/agent.sh: the build goals/*.yaml runs; replace its body"))
    out.write(
        line(
            f"wrote goals/{goal_id}.yaml: edit it, commit it, then"
            f" `harness approve {goal_id} --key KEY`"
        )
    )
    return 0


# What `--agent script` names as its build, so the template passes `harness check` as
# written: a build that says what to do and fails until it is replaced.
SCRIPT_STUB = """#!/bin/sh
# The build step: reads the prompt on stdin (or $HARNESS_PROMPT_FILE) and changes the
# checkout; the judge decides. Replace this with your script or agent command line.
echo "scripts/agent.sh: no build written yet (edit scripts/agent.sh)" >&2
exit 1
"""


def new_lesson(cwd: Path, name: str, out: TextIO) -> int:
    """A lesson template that `harness check` accepts as it is (its keyword: the name)."""
    from harness.model.lessons import LESSONS_DIR, lesson_source

    if not GOAL_ID_RE.fullmatch(name):
        raise invalid("--lesson", "", f"{show_value(name)} is not a lesson name", GOAL_ID_EXPECTED)
    root = Repo.discover(cwd).root
    path = root / LESSONS_DIR / f"{name}.yaml"
    if path.exists():
        raise InvalidInput(
            f"{lesson_source(name)}: already exists (edit it, or choose another name)"
        )
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        LESSON_TEMPLATE.format(keyword=name.replace("-", " "), stem=name.replace("-", "_"))
    )
    out.write(
        line(
            f"wrote {lesson_source(name)}: edit `when` and `text`, `harness check`, then commit it"
        )
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
