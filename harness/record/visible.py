"""The one sanitiser for everything a human reads (issue 13; lines and CI logs, issue 27).

Step output, test names, agent summaries and signer names come from outside. Before any of
it reaches a terminal, a Markdown report, an HTML page or a log line, every character that
is not printable is shown as an escape instead: C0 and C1 controls (so ESC and the 8-bit
CSI U+009B, which start terminal sequences), DEL, bidi marks, embeddings, overrides and
isolates (U+061C, U+200E/F, U+202A-202E, U+2066-2069), the line and paragraph separators
U+2028/2029 and NEL U+0085, zero-width and other format characters, lone surrogates,
unassigned and private-use code points. What Python's `str.isprintable` calls printable
(letters, marks, digits, punctuation, symbols and the plain space) passes unchanged, but
for one sequence: `##[`, which GitHub's runner reads as a workflow command anywhere in a
line of a job's log (its legacy form), is shown as `#\\x23[`.

`one_line` also escapes newline, tab and carriage return: a field can never start a new
line, so no output can forge an event line. `block` keeps newline and tab, for output
shown as a block (an output tail in the report). A command writes each line it prints
through `line`, or a message that spans lines through `lines`, whose continuation lines
start with `  | ` (docs/specs/cli.md). `line`, `lines` and `block` also keep a line from
starting with `::` (the modern form of a GitHub workflow command, read only there).
"""

from __future__ import annotations

from typing import Any

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# GitHub's runner reads `##[command]` anywhere in a line (ActionCommand.TryParse), not
# only at its start as it does `::command::`; `\x23` is `#` in the escapes' own notation.
_LEGACY_COMMAND, _LEGACY_SHOWN = "##[", "#\\x23["
# Where a message's next line starts: not `harness:`, not `::` (GitHub trims the spaces).
CONTINUED = "  | "


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _commands_shown(text: str) -> str:
    return text.replace(_LEGACY_COMMAND, _LEGACY_SHOWN) if _LEGACY_COMMAND in text else text


def _no_line_starts_a_command(text: str) -> str:
    """Each line that would start with `::` once GitHub trims its spaces starts `\\x3a:`."""
    if "::" not in text:
        return text
    shown = []
    for row in text.split("\n"):
        body = row.lstrip(" \t")
        shown.append(row[: len(row) - len(body)] + "\\x3a" + body[1:] if body[:2] == "::" else row)
    return "\n".join(shown)


def one_line(value: object) -> str:
    """`value` as text on one line, every non-printable character shown as an escape."""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else _escape(c) for c in text)
    return _commands_shown(text)


def block(value: object) -> str:
    """Like `one_line`, but newlines and tabs are kept (a block of output); a line of it
    that would start with `::` starts with `\\x3a:` instead, as `line` makes it."""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():
        text = "".join(c if c.isprintable() or c in "\n\t" else _escape(c) for c in text)
    return _no_line_starts_a_command(_commands_shown(text))


def line(value: object) -> str:
    """`value` as one line of output, its newline added: `one_line`, and a line that would
    start with `::` (after spaces, as GitHub reads it) starts with `\\x3a:` instead."""
    return _no_line_starts_a_command(one_line(value)) + "\n"


def lines(value: object) -> str:
    """`value`, a message whose text may hold newlines (a step's output), as output lines:
    the first as `line` makes it, each further one behind `CONTINUED`, so no line of it
    starts with `harness:`, `::` or anything else a reader or a CI log takes for a line of
    its own. Trailing newlines are dropped; each line gets its newline."""
    text = value if isinstance(value, str) else str(value)
    first, *rest = text.rstrip("\n").split("\n")
    return line(first) + "".join(CONTINUED + one_line(more) + "\n" for more in rest)


def tidy_numbers(value: Any) -> Any:
    """A JSON document's floats to 6 decimals (a sum of step costs reads 0.3, never
    0.30000000000000004); everything else as it is. For what a command prints, not for
    what is hashed or recorded."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {key: tidy_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [tidy_numbers(item) for item in value]
    return value
