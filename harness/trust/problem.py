"""What went wrong in signed or owner-written text, before anyone knows which file it was.

`Problem` carries the problem, the expected value and the place within the text; `quote` and
`shown_name` show untrusted text in those messages safely.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[A-Za-z0-9@._:+-]{1,64}")


class Problem(Exception):
    """A problem found by a helper that does not know the file; callers add where and the
    error class (InvalidInput for files people write, TrustFailure for signatures)."""

    def __init__(self, problem: str, expected: str | None = None, key: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.expected = expected
        self.key = key


def quote(text: str) -> str:
    """repr() of untrusted text, cut short so an error stays one readable line."""
    return repr(text) if len(text) <= 100 else repr(text[:100]) + "…"


def shown_name(text: str | bytes) -> str:
    """An identifier-like name (key type, hash) shown as is; anything else quoted."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if _NAME.fullmatch(text) else quote(text)
