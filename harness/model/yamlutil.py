"""Human-written YAML in, plain JSON-shaped data out, every failure one InvalidInput line.

The loader itself (harness/model/yamlload.py) is deliberately narrower than PyYAML's
SafeLoader: the schema and the typed records behind it must only ever see str, int,
float, bool, None, list and dict, and no input bytes may produce anything but an
InvalidInput. This module holds what does not need PyYAML: size limits, schema
validation and the wording of error messages.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import InvalidInput, invalid
from harness.model.wording import got, key_path, kind, one_line, show_value


def load_yaml(data: bytes, source: str) -> object:
    """Parse one YAML document from UTF-8 bytes; InvalidInput naming file and line.

    PyYAML is imported on first use (harness/model/yamlload.py): a run that finds every goal
    resting never parses YAML and does not pay for it.
    """
    from harness.model.yamlload import load_yaml as load

    return load(data, source)


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
    problem = "file is empty" if value is None else f"top level is {kind(value)}"
    raise invalid(source, "", problem, "a mapping of keys to values")


# ---------------------------------------------------------------------------------------
# JSON Schema: one best error, translated into `file: key.path: problem (expected ...)`.


def validate(instance: object, schema_name: str, source: str) -> None:
    """Check `instance` against harness/model/schema/<schema_name>; InvalidInput on the first error.

    The shallowest error wins (ties: schema order), so a misspelt top-level key is
    reported before anything inside it.
    """
    validator = _validator(schema_name)
    errors = list(validator.iter_errors(instance))
    if errors:
        best = min(errors, key=lambda error: len(error.absolute_path))
        raise _schema_error(best, validator.schema, source)


def load_schema(schema_name: str) -> dict[str, Any]:
    """A schema shipped as package data (harness/model/schema/*.json)."""
    from importlib import resources

    text = resources.files("harness.model").joinpath("schema", schema_name).read_text("utf-8")
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
        problem = _problem(keyword, error.instance) or one_line(error.message)
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
