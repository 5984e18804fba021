"""Shared helpers for tests of strict YAML files (goals, lessons): dotted-path edits and
the fuzzing strategies that feed the loaders random and mutated documents."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

DELETE = object()  # as a change's value: remove the key

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def with_changes(document: dict[str, Any], changes: dict[str, object] | None = None) -> bytes:
    """`document` with dotted-path changes applied (missing parents made), as YAML bytes."""
    edited = copy.deepcopy(document)
    for path, value in (changes or {}).items():
        *parents, last = path.split(".")
        target = edited
        for name in parents:
            target = target.setdefault(name, {})
        if value is DELETE:
            del target[last]
        else:
            target[last] = value
    return yaml.safe_dump(edited, sort_keys=False, allow_unicode=True).encode()


def mutated(text: str, changes: dict[str, object]) -> bytes:
    """The YAML `text` with changes applied where their parents exist (fuzzing: any change)."""
    document = yaml.safe_load(text)
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = document
        for name in parents:
            target = target.get(name) if isinstance(target, dict) else None
        if isinstance(target, dict):
            if value is DELETE:
                target.pop(last, None)
            else:
                target[last] = value
    return yaml.safe_dump(document, allow_unicode=True).encode()


def json_values(*specials: str) -> st.SearchStrategy[Any]:
    """Any JSON-like value, with some strings chosen to hit the loader's checks."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text(max_size=20)
        | st.sampled_from(list(specials)),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=8), children, max_size=3)
        ),
        max_leaves=6,
    )


def byte_edits(text: str) -> st.SearchStrategy[list[tuple[int, bytes, int]]]:
    """Up to four (position, inserted bytes, removed count) edits of `text`."""
    edit = st.tuples(st.integers(0, len(text) - 1), st.binary(max_size=3), st.integers(0, 3))
    return st.lists(edit, min_size=1, max_size=4)


def edited(text: str, edits: list[tuple[int, bytes, int]]) -> bytes:
    data = bytearray(text.encode())
    for position, insert, remove in edits:
        data[position : position + remove] = insert
    return bytes(data)
