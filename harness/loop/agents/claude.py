"""`format: claude-json`: Claude Code's `--output-format json` or `stream-json` output.

Claude Code 2.1.332 reports `total_cost_usd` as the session's running total when a
build resumes one (`--resume`, `--continue`, `--fork-session`), but `num_turns` and
`usage` for this process alone. Which one a result holds is told from the result
itself: `modelUsage` counts the tokens its `total_cost_usd` was priced from (with
`costUSD` per model), `usage` counts this process's own. Equal: the cost is this
process's. More in `modelUsage`: the cost is the session's, and the previous build's
total for that session is subtracted (`spend.spend_data`). Either missing: the cost is
taken whole, counting more rather than less. Turns are `num_turns`, or the number of
assistant messages printed (`stream-json`) when that is more.
"""

from __future__ import annotations

from typing import Any

from harness.loop.agents.lines import Parser, json_values
from harness.loop.agents.usage import (
    Scope,
    Usage,
    bounded,
    cost,
    count,
    session,
    summary,
    version,
)

NO_RESULT = "claude-json: no result object in the output"
_USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
_MODEL_KEYS = ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")


class ClaudeParser(Parser):
    name = "claude-json"

    def __init__(self) -> None:
        super().__init__()
        self.result_event: dict[str, Any] | None = None
        self.messages = 0  # assistant messages seen (one message may span several events)
        self._last_message: str | None = None
        self.session: str | None = None
        self.version: str | None = None  # stream-json's init event says it

    def line(self, text: str) -> None:
        for value in json_values(text):
            # `--output-format json --verbose` prints every message as one array.
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    self._event(item)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "result":
            self.result_event = event
        elif kind == "assistant":
            message = event.get("message")
            ident = message.get("id") if isinstance(message, dict) else None
            if not isinstance(ident, str) or ident != self._last_message:
                self.messages += 1
            self._last_message = ident if isinstance(ident, str) else None
        elif kind == "system":
            self.session = self.session or session(event.get("session_id"))
            self.version = self.version or version(event.get("claude_code_version"))

    def result(self) -> Usage:
        result = self.result_event
        if result is None:
            turns = self.messages or None
            evidence = f"claude: {self.messages} assistant message(s) printed" if turns else None
            return Usage(
                None, turns, None, NO_RESULT, self.session, evidence=evidence, version=self.version
            )
        total = cost(result.get("total_cost_usd"))
        scope, share, cost_evidence = _cost_scope(result)
        turns, turns_evidence = self._turns(count(result.get("num_turns")))
        return Usage(
            cost_usd=total,
            turns=turns,
            summary=summary(result.get("result")),
            error=_error(result),
            session=session(result.get("session_id")) or self.session,
            cost_scope=scope,
            evidence=f"{cost_evidence}; {turns_evidence}",
            unavailable=_unavailable(result),
            session_cost_usd=total,
            cost_floor_usd=_floor(total, share),
            version=self.version,
        )

    def _turns(self, reported: int | None) -> tuple[int | None, str]:
        if self.messages and (reported is None or self.messages > reported):
            return self.messages, f"turns: {self.messages} assistant messages printed"
        return reported, "turns: num_turns"


def _token_sum(mapping: Any, keys: tuple[str, ...]) -> int | None:
    if not isinstance(mapping, dict):
        return None
    values = [count(mapping.get(key)) for key in keys]
    return sum(v for v in values if v is not None) if any(v is not None for v in values) else None


def _cost_scope(result: dict[str, Any]) -> tuple[Scope, float, str]:
    """Whose cost `total_cost_usd` is, and the share of it this process's tokens prove."""
    own = _token_sum(result.get("usage"), _USAGE_KEYS)
    models = result.get("modelUsage")
    priced = None
    if isinstance(models, dict):
        sums = [_token_sum(entry, _MODEL_KEYS) for entry in models.values()]
        priced = sum(s or 0 for s in sums)
    if own is None or priced is None:
        return "process", 1.0, "cost: no usage and modelUsage to compare, taken whole"
    if priced > own:
        evidence = f"cost: modelUsage {priced} tokens > usage {own}, a session total"
        return "session", own / priced, evidence
    return "process", 1.0, f"cost: modelUsage {priced} tokens = usage {own}, this process's"


def _error(result: dict[str, Any]) -> str | None:
    # error_max_turns has been seen with is_error false: the subtype alone is a failure.
    subtype = result.get("subtype")
    named = subtype if isinstance(subtype, str) and subtype != "success" else None
    if named is not None:
        return bounded(named)
    return "is_error" if result.get("is_error") is True else None


def _unavailable(result: dict[str, Any]) -> str | None:
    """The model API failed: `is_error` with an API status or `terminal_reason: api_error`.

    `subtype` stays "success" then (2.1.332), so it tells nothing.
    """
    status = result.get("api_error_status")
    api_failed = status not in (None, "") or result.get("terminal_reason") == "api_error"
    if result.get("is_error") is not True or not api_failed:
        return None
    message = result.get("result")
    if isinstance(message, str) and message.strip():
        return bounded(message.strip())
    return bounded(f"API error {status}" if status is not None else "API error")


def _floor(total: float | None, share: float) -> float:
    if total is None:
        return 0.0
    return total if share >= 1 else round(total * share, 9)
