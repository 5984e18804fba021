"""A stream of stdout chunks cut into lines, in memory bounded by one line's cap.

The result never depends on where the chunks were cut: a line is only looked at once
its newline arrived (or the stream ended), and a line longer than `MAX_LINE_BYTES` is
dropped whole, however it arrived, and counted in `dropped`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from harness.loop.agents.usage import NOTHING, Usage, bounded
from harness.store.fsutil import strict_json_loads

MAX_LINE_BYTES = 8 * 1024 * 1024  # claude's `--verbose` JSON is one line with every message


class LineStream:
    """Feed bytes; override `line` to see each whole line (decoded, newline stripped)."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self.dropped = 0
        self._buf = bytearray()
        self._overlong = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._keep(chunk[start:])
                return
            self._keep(chunk[start:end])
            self._emit()
            start = end + 1

    def close(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self._buf or self._overlong:
            self._emit()

    def line(self, text: str) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _keep(self, part: bytes) -> None:
        if self._overlong:
            return
        if len(self._buf) + len(part) > self.limit:
            self._overlong = True
            self._buf.clear()
            return
        self._buf += part

    def _emit(self) -> None:
        if self._overlong:
            self.dropped += 1
        else:
            self.line(self._buf.decode("utf-8", errors="replace").rstrip("\r"))
        self._buf.clear()
        self._overlong = False


def json_values(text: str) -> Iterator[Any]:
    """The JSON value on this line, if it is one (objects and arrays only)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            yield strict_json_loads(stripped)
        except (ValueError, RecursionError):
            return


class Parser(LineStream):
    """One output format: fed stdout chunks as they arrive, a Usage once it ended."""

    name = "plain"

    def finish(self) -> Usage:
        self.close()
        usage = self.result()
        if self.dropped:
            note = f"{self.name}: {self.dropped} output line(s) over {self.limit} bytes skipped"
            usage = replace(usage, error=bounded("; ".join(filter(None, (usage.error, note)))))
        return usage

    def line(self, text: str) -> None:
        return None

    def result(self) -> Usage:
        return NOTHING
