"""Hostile text: every string taken from an event, made safe and bounded for the page.

Agent summaries, test names, even signer names come from outside, so they are escaped and
control and bidi-override characters are made visible; numbers are checked to be finite.

The page is made of `Html` alone, and only this module makes an `Html` from text that is
not a literal: `esc` (text escaped), `html` (a literal template, every value put in escaped
unless it is already `Html` or a number), `join` and `href`. A section is a function that
returns `Html`, so a string built any other way (an f-string, `+`, `str.format`) is a plain
`str` that mypy refuses where `Html` is wanted, and one that reaches `html` or `join` is
escaped, never trusted. `tests/record/test_report_escaping.py` holds the rest: `Html(...)`
and `html(...)` take only a literal outside this module, and a hostile value in every field
a human or an agent controls comes out as text.
"""

from __future__ import annotations

import html as _html
import json
import math
from collections.abc import Iterable
from typing import LiteralString
from urllib.parse import quote

from harness.record.visible import block

TEXT_CHARS = 400


class Html(str):
    """Markup the page holds as it is: escaped text, or what the code itself wrote."""

    __slots__ = ()


EMPTY = Html("")


def as_text(value: object) -> str:
    """Any JSON value as text; a non-string where a string was expected still shows."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def esc(value: object) -> Html:
    """Text safe in HTML content and in double- or single-quoted attributes; `Html` as it is."""
    if isinstance(value, Html):
        return value
    return Html(_html.escape(block(as_text(value)), quote=True))


def _filled(value: object) -> object:
    """What a template's placeholder gets: `Html` and numbers as they are, the rest escaped."""
    if isinstance(value, Html):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value  # formatted by the placeholder's spec: digits, signs, separators
    return esc(value)


def html(template: LiteralString, /, *args: object, **kwargs: object) -> Html:
    """`template`, markup written in the code, its `{}` placeholders filled (`str.format`)
    with each value escaped, unless it is `Html` or a number."""
    filled = {name: _filled(value) for name, value in kwargs.items()}
    return Html(template.format(*map(_filled, args), **filled))


def join(parts: Iterable[Html], separator: Html = EMPTY) -> Html:
    """The parts one after another; a plain `str` among them is escaped, not trusted."""
    return Html(separator.join(map(esc, parts)))


def href(name: str) -> Html:
    """A link to a file next to the page: every character but letters, digits and `_.-~`
    percent-encoded, so no name can make it a `javascript:` link or one off the site."""
    return esc(quote(name, safe=""))


def page_bytes(parts: Iterable[Html]) -> bytes:
    """The page as written: its parts, UTF-8."""
    return join(parts).encode("utf-8")


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
