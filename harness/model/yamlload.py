"""The strict YAML loader behind `yamlutil.load_yaml`, kept apart so PyYAML is imported
only by commands that read YAML."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.nodes import MappingNode, Node
from yaml.reader import ReaderError

from harness.errors import InvalidInput, invalid
from harness.model.wording import one_line, show_value

# Composition recurses once per level; a fixed ceiling keeps a 256 KiB file of "[[[[…"
# from reaching Python's recursion limit. Real goal and config files nest 3 levels deep.
MAX_DEPTH = 32

_TAG = "tag:yaml.org,2002:"
_MERGE_TAG = _TAG + "merge"

# YAML 1.1 scalar rules that turn plain words into surprises: yes/no/on/off become
# booleans, 1:30 becomes the base-60 number 90 and 2024-01-01 a date. Goal files are
# read by people, so only true/false are booleans and numbers are the usual forms.
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?0b[01_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?[0-9][0-9_]*)$")
_FLOAT_RE = re.compile(
    r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?"
    r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_REPLACED_RESOLVERS = {_TAG + name for name in ("bool", "int", "float", "timestamp")}
# Explicit tags that would build something JSON cannot hold (bytes, dates, sets, pairs).
_REFUSED_CONSTRUCTORS = {_TAG + name for name in ("binary", "timestamp", "set", "omap", "pairs")}


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases, duplicate keys, deep nesting or non-JSON types."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # Aliases can expand a small file into a huge or self-referencing structure, and a
        # goal file never needs one.
        if self.check_event(yaml.AliasEvent):
            raise ComposerError(None, None, "aliases (*name) are not allowed", self._next_mark())
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                problem = f"nested more than {MAX_DEPTH} levels"
                raise ComposerError(None, None, problem, self._next_mark())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _next_mark(self) -> Mark:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
        mark: Mark = event.start_mark
        return mark

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # Explicit tags reach constructors that raise plain exceptions: `!!int x` a
        # ValueError, `!!bool maybe` a KeyError, a 5,000-digit number Python's int limit.
        try:
            return super().construct_object(node, deep)
        except (ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
            problem = f"cannot read {show_value(node.value)} as {node.tag.removeprefix(_TAG)}"
            raise ConstructorError(None, None, problem, node.start_mark) from exc

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self._refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep)

    def _refuse_duplicate_keys(self, node: MappingNode) -> None:
        # PyYAML keeps the last of two equal keys silently; a reviewer reading the first
        # one would approve a value that is not the one used.
        first_line: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            if not isinstance(key, Hashable):
                continue  # PyYAML refuses it with its own message
            line = key_node.start_mark.line + 1
            if key in first_line:
                problem = f"duplicate key {show_value(key)}, first on line {first_line[key]}"
                raise ConstructorError(None, None, problem, key_node.start_mark)
            first_line[key] = line


# Own copies of the class tables, so SafeLoader itself stays as PyYAML made it.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED_RESOLVERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.yaml_constructors = {
    tag: constructor
    for tag, constructor in yaml.SafeLoader.yaml_constructors.items()
    if tag not in _REFUSED_CONSTRUCTORS
}
_StrictLoader.add_implicit_resolver(_TAG + "bool", _BOOL_RE, list("tTfF"))
_StrictLoader.add_implicit_resolver(_TAG + "int", _INT_RE, list("-+0123456789"))
_StrictLoader.add_implicit_resolver(_TAG + "float", _FLOAT_RE, list("-+0123456789."))


def load_yaml(data: bytes, source: str) -> object:
    """Parse one YAML document from UTF-8 bytes; InvalidInput naming file and line."""
    text = _decode_utf8(data, source)
    try:
        return _load_text(text)
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc, source) from None
    except ReaderError as exc:
        # The reader refuses control characters before any line is tracked.
        line = text.count("\n", 0, exc.position) + 1
        problem = f"character U+{exc.character:04X} is not allowed"
        raise invalid(source, f"line {line}", problem, "printable text") from None
    except yaml.YAMLError as exc:
        raise invalid(source, "", f"not valid YAML: {one_line(str(exc))}") from None


def _load_text(text: str) -> object:
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _decode_utf8(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problem = f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8"
        raise invalid(source, f"line {line}", problem, "UTF-8 text") from None


def _marked_error(exc: yaml.MarkedYAMLError, source: str) -> InvalidInput:
    mark = exc.problem_mark or exc.context_mark
    if mark is not None and "'\\t'" in (exc.problem or ""):
        # PyYAML's own words ("found character '\t' that cannot start any token") do not
        # say that YAML indentation is spaces only.
        line = f"line {mark.line + 1}"
        return invalid(source, line, "indented with a tab", "indentation with spaces")
    # PyYAML's context reads as a lead-in: "while scanning a simple key, could not find ..."
    parts = [part for part in (exc.context, exc.problem) if part]
    problem = ", ".join(parts) or "not valid YAML"
    where = f"line {mark.line + 1}" if mark is not None else ""
    return invalid(source, where, one_line(problem))
