"""The agent's `HARNESS_REPORT_FILE`, and how it combines with what its output said."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.loop.agents.usage import Usage, bounded, cost, count, summary
from harness.loop.judge import read_untrusted_file
from harness.store.fsutil import strict_json_loads

MAX_REPORT_BYTES = 64 * 1024


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


def combine(report: Usage | None, parsed: Usage) -> Usage:
    """The report file's values win where present (they are this process's); errors are kept."""
    if report is None:
        return parsed
    errors = [e for e in (report.error, parsed.error) if e]
    reported_cost = report.cost_usd is not None
    return replace(
        parsed,
        cost_usd=report.cost_usd if reported_cost else parsed.cost_usd,
        cost_scope="process" if reported_cost else parsed.cost_scope,
        turns=report.turns if report.turns is not None else parsed.turns,
        summary=report.summary if report.summary is not None else parsed.summary,
        error=bounded("; ".join(errors)) if errors else None,
        evidence=_joined("cost: the report file", parsed.evidence)
        if reported_cost
        else parsed.evidence,
    )


def _joined(first: str, rest: str | None) -> str:
    return f"{first}; {rest}" if rest else first


def _ignored(why: str) -> Usage:
    return Usage(None, None, None, bounded(f"report file ignored: {why}"))


def _report_usage(report: dict[str, Any]) -> Usage:
    values = (
        cost(report.get("cost_usd")),
        count(report.get("turns")),
        summary(report.get("summary")),
    )
    problems = [
        f"{key} {expected}"
        for key, value, expected in zip(
            ("cost_usd", "turns", "summary"),
            values,
            ("must be a finite number >= 0", "must be an integer >= 0", "must be a string"),
            strict=True,
        )
        if key in report and value is None
    ]
    error = bounded("report file field ignored: " + "; ".join(problems)) if problems else None
    return Usage(values[0], values[1], values[2], error)
