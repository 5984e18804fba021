"""Each tool's build command, in one place, so the goal templates can replace them.

These are the commands seen to work unattended with the pinned CLIs (docs/specs/agents.md,
from the spike's findings). When `harness new --agent <tool>` writes a goal whose command
works, a test here should take the command from that template instead.
"""

from __future__ import annotations

from typing import Any

# Claude Code: the prompt on stdin; root needs IS_SANDBOX=1 (tools.claude_env) for
# --dangerously-skip-permissions. claude-sonnet-4-5 is priced at $3/$15 per million tokens.
CLAUDE = ["claude", "-p", "--output-format", "json", "--dangerously-skip-permissions"]
CLAUDE_MODEL = ["--model", "claude-sonnet-4-5"]
CLAUDE_BUILD = [*CLAUDE, *CLAUDE_MODEL]
# --continue resumes the newest session of this cwd, and starts one when there is none.
CLAUDE_RESUME_BUILD = [*CLAUDE, *CLAUDE_MODEL, "--continue"]

# Codex: `--sandbox workspace-write` replaces the removed --full-auto; before `resume`,
# because `exec resume` has no --sandbox of its own and would fall back to read-only.
CODEX = ["codex", "exec", "--json", "--sandbox", "workspace-write"]
CODEX_BUILD = [*CODEX, "-"]
# `resume --last` resumes the newest thread, and starts one when there is none.
CODEX_RESUME_BUILD = [*CODEX, "resume", "--last", "-"]

# aider: no URL following, no update check, no analytics, its history files kept out of the
# repository, no streaming (streamed, it counts tokens itself and ignores the API's usage).
AIDER_FLAGS = (
    "--model openai/gpt-4o --weak-model openai/gpt-4o --yes-always --no-auto-commits"
    " --no-dirty-commits --no-analytics --analytics-disable --no-check-update --no-detect-urls"
    " --no-show-model-warnings --no-pretty --no-fancy-input --no-gitignore"
    " --no-show-release-notes --no-suggest-shell-commands --map-tokens 0"
    " --chat-history-file /dev/null --input-history-file /dev/null --no-stream"
)
AIDER_BUILD = [
    "sh",
    "-c",
    f'exec aider {AIDER_FLAGS} --message-file "$HARNESS_PROMPT_FILE" "$@"',
    "aider",
]


def build(
    tool: str, *, resume: bool = False, files: tuple[str, ...] = ("value.txt",)
) -> dict[str, Any]:
    """The goal file's `build:` for `tool`; aider is given the files it may edit."""
    if tool == "claude":
        return {"run": CLAUDE_RESUME_BUILD if resume else CLAUDE_BUILD, "format": "claude-json"}
    if tool == "codex":
        return {"run": CODEX_RESUME_BUILD if resume else CODEX_BUILD, "format": "codex-jsonl"}
    if tool == "aider":
        return {"run": [*AIDER_BUILD, *files], "format": "aider"}
    raise ValueError(f"no build command for {tool!r}")
