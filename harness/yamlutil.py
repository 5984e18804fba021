"""Human-written YAML in, plain JSON-shaped data out, every failure one InvalidInput line.

The loader is deliberately narrower than PyYAML's SafeLoader: the schema and the typed
records behind it must only ever see str, int, float, bool, None, list and dict, and no
input bytes may produce anything but an InvalidInput.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Hashable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.nodes import MappingNode, Node
from yaml.reader import ReaderError

from harness.errors import InvalidInput, invalid

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
        raise invalid(source, "", f"not valid YAML: {_one_line(str(exc))}") from None


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
    # PyYAML's context reads as a lead-in: "while scanning a simple key, could not find ..."
    parts = [part for part in (exc.context, exc.problem) if part]
    problem = ", ".join(parts) or "not valid YAML"
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}" if mark is not None else ""
    return invalid(source, where, _one_line(problem))


def check_size(data: bytes, limit: int, source: str) -> None:
    """Refuse a file larger than `limit` bytes before parsing any of it."""
    _refuse_size(len(data), limit, source)


def _refuse_size(size: int, limit: int, source: str) -> None:
    if size > limit:
        raise invalid(source, "", f"file is {size:,} bytes", f"at most {limit:,} bytes")


def read_capped(path: Path, limit: int, source: str) -> bytes:
    """A file's bytes, refusing one over `limit` without reading it whole."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            _refuse_size(size, limit, source)
            data = handle.read(limit + 1)
    except OSError as exc:
        raise invalid(source, "", f"cannot read the file: {exc.strerror or exc}") from None
    check_size(data, limit, source)
    return data


def expect_mapping(value: object, source: str) -> dict[Any, Any]:
    """The document's top level, which must be a mapping."""
    if isinstance(value, dict):
        return value
    problem = "file is empty" if value is None else f"top level is {_kind(value)}"
    raise invalid(source, "", problem, "a mapping of keys to values")


# ---------------------------------------------------------------------------------------
# JSON Schema: one best error, translated into `file: key.path: problem (expected ...)`.


def validate(instance: object, schema_name: str, source: str) -> None:
    """Check `instance` against harness/schema/<schema_name>; InvalidInput on the first error.

    The shallowest error wins (ties: schema order), so a misspelt top-level key is
    reported before anything inside it.
    """
    validator = _validator(schema_name)
    errors = list(validator.iter_errors(instance))
    if errors:
        best = min(errors, key=lambda error: len(error.absolute_path))
        raise _schema_error(best, validator.schema, source)


def load_schema(schema_name: str) -> dict[str, Any]:
    """A schema shipped as package data (harness/schema/*.json)."""
    text = resources.files("harness").joinpath("schema", schema_name).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator(schema_name: str) -> Any:
    # jsonschema costs tens of milliseconds to import; only validating commands pay it.
    import jsonschema  # type: ignore[import-untyped]

    base = jsonschema.Draft202012Validator
    # JSON Schema counts 3.0 as an integer; a count or a number of seconds must be an int.
    strict_int = base.TYPE_CHECKER.redefine("integer", lambda _checker, value: _is_int(value))
    cls = jsonschema.validators.extend(base, type_checker=strict_int)
    return cls(load_schema(schema_name))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _schema_error(error: Any, root: Mapping[str, Any], source: str) -> InvalidInput:
    path = list(error.absolute_path)
    keyword = error.validator
    expected = _describe(error.schema, root)
    if keyword == "additionalProperties":
        known = error.schema.get("properties", {})
        unknown = next(key for key in error.instance if key not in known)
        problem = f"unknown key {show_value(unknown)}"
        expected = "one of " + ", ".join(known) if known else "no keys"
    elif keyword == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        path.append(missing)
        problem = "required key is missing"
        expected = _describe(error.schema.get("properties", {}).get(missing, {}), root)
    else:
        problem = _problem(keyword, error.instance) or _one_line(error.message)
    return invalid(source, key_path(path), problem, expected)


def _problem(keyword: str, value: object) -> str | None:
    if keyword == "type":
        return got(value)
    if keyword in ("const", "enum"):
        return f"{show_value(value)} is not supported"
    if keyword == "minLength":
        return "got an empty string"
    if keyword == "minItems":
        return "got an empty list"
    if keyword in ("minimum", "exclusiveMinimum"):
        return f"{show_value(value)} is too small"
    if keyword in ("maximum", "exclusiveMaximum"):
        return f"{show_value(value)} is too large"
    return None


def _describe(schema: Mapping[str, Any], root: Mapping[str, Any]) -> str | None:
    """The `description` a schema gives for its value, following one local $ref."""
    if "description" in schema:
        return str(schema["description"])
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _describe(root["$defs"][ref.removeprefix("#/$defs/")], root)
    return None


# ---------------------------------------------------------------------------------------
# Message pieces shared by every module that reports on a file's values.


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
        return f"got {_kind(value)}"
    return f"got {_kind(value)} {show_value(value)}"


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
    return _kind(value)


def _show_float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return repr(value)


def _kind(value: object) -> str:
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


def _one_line(text: str) -> str:
    return " ".join(text.split())
