"""Does a recorded event's data match its declared type (harness.record.events.EVENT_DATA)?

Checked on the committed example run, on the demo, and after every test that drives a
managed repository (tests/conftest.py), so a key the controller writes without declaring
it, or a declared key of the wrong type, fails a test.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from harness.record.events import EVENT_DATA


def problems(event_type: str, data: object) -> list[str]:
    """What is wrong with one event's data, as readable lines; empty when it conforms."""
    shape = EVENT_DATA.get(event_type)  # type: ignore[call-overload]
    if shape is None:
        return [f"{event_type}: not an event type"]
    if not isinstance(data, dict):
        return [f"{event_type}: data is {type(data).__name__}, not a mapping"]
    hints = get_type_hints(shape)
    found = [f"{event_type}: missing {key!r}" for key in shape.__required_keys__ - data.keys()]
    found += [f"{event_type}: undeclared {key!r}" for key in data.keys() - hints.keys()]
    found += [
        f"{event_type}.{key}: {value!r} is not {hints[key]}"
        for key, value in data.items()
        if key in hints and not matches(value, hints[key])
    ]
    return found


def matches(value: object, hint: Any) -> bool:
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in get_args(hint)
    if origin in (Union, types.UnionType):
        return any(matches(value, arm) for arm in get_args(hint))
    if origin is list:
        (item,) = get_args(hint)
        return isinstance(value, list) and all(matches(v, item) for v in value)
    if origin is dict:
        key, item = get_args(hint)
        return isinstance(value, dict) and all(
            matches(k, key) and matches(v, item) for k, v in value.items()
        )
    if typing.is_typeddict(hint):
        return isinstance(value, dict) and not _typed_dict_problems(value, hint)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _typed_dict_problems(value: dict[str, Any], shape: Any) -> bool:
    hints = get_type_hints(shape)
    return bool(
        shape.__required_keys__ - value.keys()
        or value.keys() - hints.keys()
        or any(not matches(v, hints[k]) for k, v in value.items())
    )


def ledger_problems(folder: Path) -> list[str]:
    """Every non-conforming event in the ledger segments under `folder` (recursively)."""
    found = []
    for segment in sorted(folder.rglob("events/*.jsonl")):
        for number, line in enumerate(segment.read_bytes().splitlines(), 1):
            try:
                event = json.loads(line)["e"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn or forged line: the ledger's own checks own that
            found += [f"{segment}:{number}: {p}" for p in problems(event["type"], event["data"])]
    return found
