"""Reading what an agent says it spent, from its report file or its own output.

Everything here comes from the agent, which is untrusted: nothing raises on bad input,
a bad value becomes None with the reason in `error`, and no error message repeats the
agent's bytes beyond a bounded excerpt.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.loop.judge import read_untrusted_file
from harness.store.fsutil import strict_json_loads

FORMATS = ("plain", "claude-json", "codex-jsonl", "aider")
MAX_REPORT_BYTES = 64 * 1024
MAX_SUMMARY_CHARS = 2_000
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Usage:
    cost_usd: float | None  # as reported by this process; may be its running total
    turns: int | None
    summary: str | None  # at most MAX_SUMMARY_CHARS
    error: str | None  # why something is missing or the agent reported failure
    session: str | None = None  # the agent's session id, when it reports one
    tokens: tuple[int, int, int] | None = None  # input, cached input, output (codex-jsonl)
    # The tool's own message when its output shows the model API failed (rate limit,
    # overload, 5xx, auth): the build is then "unavailable", not the agent's work.
    unavailable: str | None = None


NOTHING = Usage(None, None, None, None)


def read_report_file(path: Path) -> Usage | None:
    """The agent's `HARNESS_REPORT_FILE`: None when it wrote none, else what was valid."""
    try:
        data = read_untrusted_file(path, MAX_REPORT_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return _ignored(str(exc) or type(exc).__name__)
    try:
        report = strict_json_loads(data)
    except (ValueError, RecursionError) as exc:
        return _ignored(f"not valid JSON ({exc})")
    if not isinstance(report, dict):
        return _ignored("not a JSON object")
    return _report_usage(report)


def parse_output(fmt: str, stdout: str) -> Usage:
    """Cost, turns and summary from the agent's stdout in the goal's `format`."""
    if fmt in ("plain", "aider"):
        return NOTHING
    if fmt == "claude-json":
        return _claude_usage(stdout)
    if fmt == "codex-jsonl":
        return _codex_usage(stdout)
    raise ValueError(f"unknown agent output format {fmt!r} (expected one of {FORMATS})")


def combine(report: Usage | None, parsed: Usage) -> Usage:
    """The report file's values win where present; both errors are kept."""
    if report is None:
        return parsed
    errors = [e for e in (report.error, parsed.error) if e]
    return Usage(
        cost_usd=report.cost_usd if report.cost_usd is not None else parsed.cost_usd,
        turns=report.turns if report.turns is not None else parsed.turns,
        summary=report.summary if report.summary is not None else parsed.summary,
        error=_bounded("; ".join(errors)) if errors else None,
        session=parsed.session,
        tokens=parsed.tokens,
        unavailable=parsed.unavailable,
    )


def _ignored(why: str) -> Usage:
    return Usage(None, None, None, _bounded(f"report file ignored: {why}"))


def _report_usage(report: dict[str, Any]) -> Usage:
    cost, turns, summary = (
        _cost(report.get("cost_usd")),
        _count(report.get("turns")),
        _summary(report.get("summary")),
    )
    problems = [
        f"{key} {expected}"
        for key, value, expected in (
            ("cost_usd", cost, "must be a finite number >= 0"),
            ("turns", turns, "must be an integer >= 0"),
            ("summary", summary, "must be a string"),
        )
        if key in report and value is None
    ]
    error = _bounded("report file field ignored: " + "; ".join(problems)) if problems else None
    return Usage(cost, turns, summary, error)


def _cost(value: Any) -> float | None:
    # bool is an int subclass: `true` is not a cost.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    # `+ 0.0` turns -0.0 into 0.0, so a reported zero is always the same value.
    return number + 0.0 if math.isfinite(number) and number >= 0 else None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _summary(value: Any) -> str | None:
    return value[:MAX_SUMMARY_CHARS] if isinstance(value, str) else None


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _json_lines(stdout: str) -> Iterator[Any]:
    """Each line of `stdout` that parses as JSON, in order; other lines are skipped."""
    for line in stdout.splitlines():
        text = line.strip()
        if text[:1] in ("{", "["):
            try:
                yield strict_json_loads(text)
            except (ValueError, RecursionError):
                continue


def _claude_result(value: Any) -> dict[str, Any] | None:
    # `--output-format json --verbose` prints every message as one array; the result is last.
    candidates = value if isinstance(value, list) else [value]
    for item in reversed(candidates):
        if isinstance(item, dict) and item.get("type") == "result":
            return item
    return None


def _claude_usage(stdout: str) -> Usage:
    results = [r for r in map(_claude_result, _json_lines(stdout)) if r is not None]
    if not results:
        return Usage(None, None, None, "claude-json: no result object in the output")
    result = results[-1]
    return Usage(
        cost_usd=_cost(result.get("total_cost_usd")),
        turns=_count(result.get("num_turns")),
        summary=_summary(result.get("result")),
        error=_claude_error(result),
        session=_session(result.get("session_id")),
        unavailable=_claude_unavailable(result),
    )


def _claude_unavailable(result: dict[str, Any]) -> str | None:
    # Claude Code 2.1 on a failed API call (seen for 429, 500, 529): is_error true,
    # terminal_reason "api_error", api_error_status the HTTP status, subtype still
    # "success", and the message in `result`. Either sign is enough.
    status = result.get("api_error_status")
    failed = result.get("terminal_reason") == "api_error" or _count(status) is not None
    if result.get("is_error") is not True or not failed:
        return None
    message = result.get("result")
    shown = message if isinstance(message, str) and message else f"API error {status!r}"
    return _bounded(shown)


def _session(value: Any) -> str | None:
    return value[:200] if isinstance(value, str) and value else None


def _claude_error(result: dict[str, Any]) -> str | None:
    # error_max_turns has been seen with is_error false: the subtype alone is a failure.
    subtype = result.get("subtype")
    named = subtype if isinstance(subtype, str) and subtype != "success" else None
    if named is not None:
        return _bounded(named)
    return "is_error" if result.get("is_error") is True else None


def _codex_usage(stdout: str) -> Usage:
    turns, summary, seen, session = 0, None, False, None
    tokens = [0, 0, 0]
    errors: list[str] = []
    for event in _json_lines(stdout):
        if not isinstance(event, dict):
            continue
        seen = True
        kind = event.get("type")
        if kind == "thread.started":
            session = _session(event.get("thread_id"))
        elif kind == "turn.completed":
            turns += 1
            _add_tokens(tokens, event.get("usage"))
        elif kind in ("turn.failed", "error"):
            errors.append(_codex_error(event))
        elif kind == "item.completed":
            summary = _agent_message(event.get("item")) or summary
    if not seen:
        return Usage(None, None, None, "codex-jsonl: no JSON events in the output")
    error = _bounded("; ".join(errors)) if errors else None
    return Usage(None, turns, summary, error, session, (tokens[0], tokens[1], tokens[2]))


def _add_tokens(tokens: list[int], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    for index, key in enumerate(("input_tokens", "cached_input_tokens", "output_tokens")):
        count = _count(usage.get(key))
        tokens[index] += count or 0


def _codex_error(event: dict[str, Any]) -> str:
    detail = event.get("error")
    message = detail.get("message") if isinstance(detail, dict) else event.get("message")
    kind = str(event.get("type"))
    return f"{kind}: {message}" if isinstance(message, str) and message else kind


def _agent_message(item: Any) -> str | None:
    if isinstance(item, dict) and item.get("type") == "agent_message":
        return _summary(item.get("text"))
    return None
