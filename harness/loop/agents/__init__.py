"""Reading what an agent spent: its output as a stream, its report file, its own records.

One module per output format (`plain`, `claude`, `codex`, `aider`), each a stream parser
fed stdout chunks as they arrive (`lines`: bounded line cutting); the report file
(`report`); what the tools record themselves (`records`: Claude Code's transcript,
Codex's rollout); one build's meter tying them together (`meter`); and the shared
`Usage` (`usage`). Which figure is a per-process amount and which a session's running
total is decided per format from evidence, written in docs/specs/agents.md.
"""

from __future__ import annotations

from harness.loop.agents.meter import FORMATS, Meter, make_parser, parse_output
from harness.loop.agents.report import MAX_REPORT_BYTES, combine, read_report_file
from harness.loop.agents.usage import MAX_ERROR_CHARS, MAX_SUMMARY_CHARS, NOTHING, Usage

__all__ = [
    "FORMATS",
    "MAX_ERROR_CHARS",
    "MAX_REPORT_BYTES",
    "MAX_SUMMARY_CHARS",
    "NOTHING",
    "Meter",
    "Usage",
    "combine",
    "make_parser",
    "parse_output",
    "read_report_file",
]
