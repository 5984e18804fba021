"""Message pieces shared by every module that reports on a file's values.

Kept apart from the loaders so that both the YAML loader and the schema checks can use
them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def key_path(parts: Iterable[object]) -> str:
    """`build.run[1]` from ["build", "run", 1]."""
    text = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            name = part if isinstance(part, str) else show_value(part)
            text += f".{name}" if text else name
    return text


def got(value: object) -> str:
    """What a value of the wrong type was: `got a string '3'`, `got a list`, `no value`."""
    if value is None:
        return "no value"
    if isinstance(value, list | dict):
        return f"got {kind(value)}"
    return f"got {kind(value)} {show_value(value)}"


def show_value(value: object) -> str:
    """A short, one-line, YAML-flavoured rendering of a value for an error message."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        # str() of a huge int raises ValueError (Python's 4,300-digit limit); hex allows it.
        return str(value) if value.bit_length() <= 64 else "a very large number"
    if isinstance(value, float):
        return _show_float(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57]) + "..."
    return kind(value)


def _show_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


def kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def one_line(text: str) -> str:
    return " ".join(text.split())
