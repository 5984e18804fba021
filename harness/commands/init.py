"""`harness init`: make a repository ready for goals."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from harness.errors import InvalidInput
from harness.loop.control import CONFIG_PATH, OWNERS_PATH
from harness.record.visible import line
from harness.store.gitrepo import Repo
from harness.trust.sshwire import parse_public_key, public_key_line

CONFIG_TEMPLATE = """\
# goal-harness settings (human-owned; read from the control branch).
# Every key is optional; each is described in docs/specs/goal-file.md ("Config").
version: 1
# control_ref: main            # default: the branch checked out here
# branch_prefix: harness/      # goal branches are <prefix><id>
# defaults:
#   budget: {max_iterations: 3, max_seconds: 2h, max_cost_usd: 20, max_turns: 300}
#   halt: {no_progress_passes: 2, max_passes: 50}
#   timeouts: {build: 30m, judge: 10m, review: 10m, plan: 10m, ship: 10m}
# scrub_env: [AWS_SECRET_ACCESS_KEY]   # never passed to the agent or the tests
# redact_env: [DEPLOY_URL]             # values replaced by a receipt in every record
# sandbox: auto                        # auto | required | off: steps under bubblewrap
# sandbox_binds: [rw:/var/cache/pip]   # shown to a contained step; rw: makes it writable
# notify:                              # tell someone of a park, attention, failure
#   webhook: $SLACK_WEBHOOK_URL        # an http(s) URL, or $NAME from the runner's env
#   timeout: 10s
# destructive: []                      # more destructive rules: {class, paths, lines}
# prices: {input_usd_per_million: 1.25, cached_input_usd_per_million: 0.125, output_usd_per_million: 10}
"""
OWNERS_HEADER = """\
# Who may approve goals: git allowed_signers lines, ssh-ed25519 keys only.
# principal ssh-ed25519 AAAA... [comment]
"""
IGNORE_LINE = "/.harness/worktrees/"
LESSONS_README = """\
# Lessons

Each `<name>.yaml` here is a lesson the team learned: a build whose goal objective or
failing test matches its `when` is told its `text`, and its optional `check.run` must pass
at the done gate. `harness new --lesson <name>` writes a template; `harness check` validates
them. Lessons are read from the control branch, like goals, but need no approval, and a
check runs a command: let only people trusted to change a goal's judge change this folder
(a CODEOWNERS rule or branch protection). Anything here but `*.yaml` (this file) is ignored.
"""


def init(cwd: Path, owner: str | None, key: str | None, out: TextIO) -> int:
    if (owner is None) != (key is None):
        raise InvalidInput("--owner and --key go together (expected both or neither)")
    repo = Repo.discover(cwd)
    root = repo.root
    owner_line = _owner_line(owner, key) if owner and key else None
    _write_new(root / CONFIG_PATH, CONFIG_TEMPLATE, out)
    _write_new(root / OWNERS_PATH, OWNERS_HEADER, out)
    if owner_line:
        _add_owner(root / OWNERS_PATH, owner_line, out)
    for folder in ("goals", "ledger"):
        (root / folder).mkdir(exist_ok=True)
        _write_new(root / folder / ".gitkeep", "", out)
    _write_new(root / "lessons" / "README.md", LESSONS_README, out)
    _ensure_ignored(root / ".gitignore", out)
    out.write(
        "next: commit .harness/ goals/ ledger/ lessons/ .gitignore, then `harness new <id>`\n"
    )
    return 0


def _owner_line(owner: str, key: str) -> str:
    if any(c.isspace() for c in owner) or not owner:
        raise InvalidInput(
            f"--owner: {owner!r} (expected a principal without spaces, like alice@example.com)"
        )
    path = Path(key).expanduser()
    text = path.read_text() if path.is_file() else key
    blob = parse_public_key(text.strip(), "--key")
    return f"{owner} {public_key_line(blob)}\n"


def _write_new(path: Path, text: str, out: TextIO) -> None:
    if path.exists():
        out.write(line(f"kept {path.name if path.name == '.gitkeep' else path}"))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    out.write(line(f"wrote {path}"))


def _add_owner(path: Path, owner_line: str, out: TextIO) -> None:
    text = path.read_text()
    if owner_line in text.splitlines(keepends=True):
        return
    path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + owner_line)
    out.write(line(f"added owner {owner_line.split()[0]} to {path}"))


def _ensure_ignored(path: Path, out: TextIO) -> None:
    text = path.read_text() if path.exists() else ""
    if IGNORE_LINE in text.splitlines():
        return
    path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + IGNORE_LINE + "\n")
    out.write(line(f"added {IGNORE_LINE} to {path}"))
