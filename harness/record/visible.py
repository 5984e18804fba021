"""The one sanitiser for everything a human reads (issue 13).

Step output, test names, agent summaries and signer names come from outside. Before any of
it reaches a terminal, a Markdown report, an HTML page or a log line, every character that
is not printable is shown as an escape instead: C0 and C1 controls (so ESC and the 8-bit
CSI U+009B, which start terminal sequences), DEL, bidi marks, embeddings, overrides and
isolates (U+061C, U+200E/F, U+202A-202E, U+2066-2069), the line and paragraph separators
U+2028/2029 and NEL U+0085, zero-width and other format characters, lone surrogates,
unassigned and private-use code points. What Python's `str.isprintable` calls printable
(letters, marks, digits, punctuation, symbols and the plain space) passes unchanged.

`one_line` also escapes newline, tab and carriage return: a field can never start a new
line, so no output can forge an event line. `block` keeps newline and tab, for output
shown as a block (an output tail in the report).
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def one_line(value: object) -> str:
    """`value` as text on one line, every non-printable character shown as an escape."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def block(value: object) -> str:
    """Like `one_line`, but newlines and tabs are kept (a block of output)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else _escape(c) for c in text)
