"""`format: codex-jsonl`: `codex exec --json` events, one JSON object a line.

Codex prints no cost: its tokens are priced with the config's `prices`. Turns are the
`turn.completed` events of this process. On `codex exec resume` (0.171.0) the usage in
`turn.completed` is the thread's running total, so the tokens are marked as a possible
session total: the previous build's totals for the same thread are subtracted when every
figure grew from them, and taken whole otherwise (`spend.spend_data`). The rollout file
Codex writes under `CODEX_HOME/sessions` is better evidence when it is there
(`records.codex_rollout`): it has each response's own usage.

The model API failed when the turn ended in `turn.failed`, or no turn ended and `error`
events were printed ("Reconnecting..." notices alone, followed by a completed turn, are
retries that worked).
"""

from __future__ import annotations

from typing import Any

from harness.loop.agents.lines import Parser, json_values
from harness.loop.agents.usage import Tokens, Usage, bounded, count, session, summary

NO_EVENTS = "codex-jsonl: no JSON events in the output"
_TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")


class CodexParser(Parser):
    name = "codex-jsonl"

    def __init__(self) -> None:
        super().__init__()
        self.seen = False
        self.turns = 0
        self.tokens: Tokens = (0, 0, 0)
        self.summary: str | None = None
        self.session: str | None = None
        self.errors: list[str] = []  # the first and the last few, for the record
        self.failure: str | None = None  # the last error since the last completed turn

    def line(self, text: str) -> None:
        for event in json_values(text):
            if isinstance(event, dict):
                self.seen = True
                self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self.session = session(event.get("thread_id")) or self.session
        elif kind == "turn.completed":
            self.turns += 1
            self.tokens = _add(self.tokens, event.get("usage"))
            self.failure = None
        elif kind in ("turn.failed", "error"):
            self._error(kind, event)
        elif kind == "item.completed":
            self.summary = _agent_message(event.get("item")) or self.summary

    def _error(self, kind: str, event: dict[str, Any]) -> None:
        message = _message(event)
        text = f"{kind}: {message}" if message else kind
        if len(self.errors) < 4:
            self.errors.append(text)
        else:
            self.errors[-1] = text
        self.failure = message or kind

    def result(self) -> Usage:
        if not self.seen:
            return Usage(None, None, None, NO_EVENTS)
        error = bounded("; ".join(self.errors)) if self.errors else None
        evidence = (
            f"turns: {self.turns} turn.completed; tokens: turn.completed usage, "
            "a thread total on resume"
        )
        return Usage(
            cost_usd=None,
            turns=self.turns,
            summary=self.summary,
            error=error,
            session=self.session,
            tokens=self.tokens,
            tokens_scope="session" if self.session else "process",
            evidence=evidence,
            unavailable=bounded(self.failure) if self.failure else None,
            session_tokens=self.tokens if self.session else None,
        )


def _add(tokens: Tokens, usage: Any) -> Tokens:
    if not isinstance(usage, dict):
        return tokens
    added = [count(usage.get(key)) or 0 for key in _TOKEN_KEYS]
    return (tokens[0] + added[0], tokens[1] + added[1], tokens[2] + added[2])


def _message(event: dict[str, Any]) -> str | None:
    detail = event.get("error")
    message = detail.get("message") if isinstance(detail, dict) else event.get("message")
    return message if isinstance(message, str) and message else None


def _agent_message(item: Any) -> str | None:
    if isinstance(item, dict) and item.get("type") == "agent_message":
        return summary(item.get("text"))
    return None
