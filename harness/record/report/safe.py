"""Hostile text: every string taken from an event, made safe and bounded for the page.

Agent summaries, test names, even signer names come from outside, so they are escaped and
control and bidi-override characters are made visible; numbers are checked to be finite.
"""

from __future__ import annotations

import html
import json
import math

from harness.record.visible import block

TEXT_CHARS = 400


def as_text(value: object) -> str:
    """Any JSON value as text; a non-string where a string was expected still shows."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def esc(value: object) -> str:
    """Text safe in HTML content and in double- or single-quoted attributes."""
    return html.escape(block(as_text(value)), quote=True)


def cut(text: str, limit: int = TEXT_CHARS) -> str:
    return (
        text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    )


def finite(value: object) -> float:
    """A finite number, or 0: a malformed amount must not break the page or the chart."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def names(value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(as_text(item) for item in value[:50])
    return (as_text(value),) if value else ()
