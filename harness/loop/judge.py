"""Naming the failing tests of a judge run, from JUnit XML or from the runner's output.

Both sources are written by the code under test, so both are untrusted: nothing here
raises on bad input, and the work is bounded by the size of what is given.

The rule, kept stable because the no-progress check compares ids across passes:
- JUnit (when the file is given, is a regular file of at most MAX_JUNIT_BYTES, has no
  DOCTYPE or entity declaration, parses, and names at least one failure): every
  `<testcase>` with a `<failure>` or `<error>` child, in document order, as
  `classname::name` (just `name` when classname is empty).
- Otherwise the output, line by line:
  pytest / generic  `FAILED <id>` or `ERROR <id>`, optionally followed by ` - message`
                    -> `<id>` (an id may carry a `[parameter]` part containing spaces);
  unittest          `FAIL: test_a (pkg.mod.Class.test_a)` or `ERROR: test_a (pkg.mod.Class)`
                    -> the dotted name, with `.test_a` appended when it does not end so;
  go test           `--- FAIL: TestName (0.01s)` -> `TestName`.
Ids are deduplicated keeping their first position.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import xml.parsers.expat
from pathlib import Path

MAX_JUNIT_BYTES = 16 * 1024 * 1024
# Longer lines are noise (minified dumps); skipping them keeps the regexes cheap.
_MAX_LINE = 8_192

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_UNITTEST = re.compile(r"(?:FAIL|ERROR): (?P<method>\S+) \((?P<dotted>[\w.]+)\)")
_PYTEST = re.compile(r"(?:FAILED|ERROR) (?P<id>[^\s\[(][^\s\[]*(?:\[[^\]]*\])?)(?: - .*)?\s*")
_GO = re.compile(r"\s*--- FAIL: (?P<id>\S+)(?: \(.*\))?\s*")


def failing_tests(output: str, junit_file: Path | None) -> tuple[str, ...]:
    """The failing test ids, JUnit first and the output otherwise (see module docstring)."""
    from_junit = _junit_failures(junit_file) if junit_file is not None else ()
    return from_junit or _output_failures(output)


def first_failing_test(output: str, junit_file: Path | None) -> str | None:
    found = failing_tests(output, junit_file)
    return found[0] if found else None


def _output_failures(output: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for line in output.splitlines():
        if len(line) <= _MAX_LINE:
            test_id = _line_failure(_ANSI.sub("", line))
            if test_id:
                found.setdefault(test_id)
    return tuple(found)


def _line_failure(line: str) -> str | None:
    if match := _UNITTEST.match(line):
        dotted, method = match["dotted"], match["method"]
        return dotted if dotted.endswith("." + method) else f"{dotted}.{method}"
    if match := _PYTEST.fullmatch(line):
        return match["id"]
    if match := _GO.fullmatch(line):
        return match["id"]
    return None


def _junit_failures(path: Path) -> tuple[str, ...]:
    collector = _collected(path)
    return tuple(dict.fromkeys(collector.failed)) if collector is not None else ()


def junit_counts(path: Path) -> dict[str, int] | None:
    """The JUnit file's test cases counted (`tests`, and those with a `failures`, `errors` or
    `skipped` child), for the record; None when it is missing, refused or does not parse."""
    collector = _collected(path)
    return dict(collector.counts) if collector is not None else None


def _collected(path: Path) -> _JUnitCollector | None:
    try:
        data = read_untrusted_file(path, MAX_JUNIT_BYTES)
    except (OSError, ValueError):
        return None
    collector = _JUnitCollector()
    try:
        collector.parse(data)
    except (_Refused, xml.parsers.expat.ExpatError, ValueError, RecursionError):
        return None
    return collector


def read_untrusted_file(path: Path, limit: int) -> bytes:
    """The bytes of a file an untrusted process wrote, refusing what we must not read.

    Raises FileNotFoundError when it is missing, ValueError naming the reason when it is a
    symlink (it could point at a file we must not publish), not a regular file (a FIFO
    would block the read forever) or over `limit` bytes, and OSError otherwise.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError("is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"is larger than {limit} bytes")
    return data


_OUTCOMES = ("error", "failure", "skipped")
_COUNTED = {"error": "errors", "failure": "failures", "skipped": "skipped"}


class _Refused(Exception):
    """The document declares a DOCTYPE or entities: refused, never expanded."""


class _JUnitCollector:
    """Streams the XML through expat, keeping the failing testcases' ids and the counts."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self._case: str | None = None
        self._case_failed = False
        self._case_outcome: str | None = None
        self._depth = 0
        self._case_depth = 0

    def parse(self, data: bytes) -> None:
        parser = xml.parsers.expat.ParserCreate()
        # Refused in the parser itself, so no text encoding can hide the declaration.
        parser.StartDoctypeDeclHandler = self._refuse
        parser.EntityDeclHandler = self._refuse
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.Parse(data, True)

    def _refuse(self, *_: object) -> None:
        raise _Refused()

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if tag == "testcase":
            self._case = _case_id(attrs)
            self._case_depth = self._depth
            self._case_failed = False
            self._case_outcome = None
        elif self._depth == self._case_depth + 1 and tag in _OUTCOMES:
            self._case_failed = self._case_failed or (
                tag in ("failure", "error") and self._case is not None
            )
            # A case counts once: an error outranks a failure, which outranks a skip.
            outcome = self._case_outcome
            if outcome is None or _OUTCOMES.index(tag) < _OUTCOMES.index(outcome):
                self._case_outcome = tag

    def _end(self, tag: str) -> None:
        if tag == "testcase":
            if self._case is not None and self._case_failed:
                self.failed.append(self._case)
            self.counts["tests"] += 1
            if self._case_outcome is not None:
                self.counts[_COUNTED[self._case_outcome]] += 1
            self._case_depth = -2
        self._depth -= 1


def _case_id(attrs: dict[str, str]) -> str | None:
    name = attrs.get("name", "").strip()
    classname = attrs.get("classname", "").strip()
    if not name:
        return None
    return f"{classname}::{name}" if classname else name
