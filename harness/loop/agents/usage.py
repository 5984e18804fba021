"""What one agent process spent, as read from its output, report file or own records.

Everything here comes from the agent, which is untrusted: nothing raises on bad input,
a bad value becomes None, and no message repeats the agent's bytes beyond a bounded
excerpt.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

MAX_SUMMARY_CHARS = 2_000
MAX_ERROR_CHARS = 500
MAX_SESSION_CHARS = 200
# A version as the tools print theirs (`2.1.332`, `0.171.0`, `0.86.2`, `1.0.0-beta.1`).
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,39}")

# "process": the figure covers this process alone and is counted whole.
# "session": the figure may be the session's running total (restored on resume); the
# previous build's recorded total for the same session is subtracted when it is smaller.
Scope = Literal["process", "session"]
Tokens = tuple[int, int, int]  # input (cached included), cached input, output


@dataclass(frozen=True)
class Usage:
    cost_usd: float | None  # see cost_scope
    turns: int | None  # always this process's own
    summary: str | None  # at most MAX_SUMMARY_CHARS
    error: str | None  # why something is missing or the agent reported failure
    session: str | None = None  # the agent's session (claude) or thread (codex) id
    tokens: Tokens | None = None  # see tokens_scope; priced when there is no cost
    cost_scope: Scope = "process"
    tokens_scope: Scope = "process"
    evidence: str | None = None  # how the scopes were told apart, for the record
    unavailable: str | None = None  # the tool's own words when the model API failed
    # The session's running totals as the tool reports them, kept for the next build of
    # the same session to subtract (they differ from cost_usd/tokens when those come
    # from a per-process record, or when the tool restarted its count).
    session_cost_usd: float | None = None
    session_tokens: Tokens | None = None
    # The least this process spent by its own evidence (claude: total_cost_usd scaled by
    # this process's share of the tokens it was priced from); a subtraction never goes below.
    cost_floor_usd: float = 0.0
    # The tool's version as it reported it (its own word, for the attestation: attest.md).
    version: str | None = None


NOTHING = Usage(None, None, None, None)


def cost(value: Any) -> float | None:
    """A finite non-negative number as a float, else None."""
    # bool is an int subclass: `true` is not a cost.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    # `+ 0.0` turns -0.0 into 0.0, so a reported zero is always the same value.
    return number + 0.0 if math.isfinite(number) and number >= 0 else None


def count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def summary(value: Any) -> str | None:
    return value[:MAX_SUMMARY_CHARS] if isinstance(value, str) else None


def session(value: Any) -> str | None:
    return value[:MAX_SESSION_CHARS] if isinstance(value, str) and value else None


def version(value: Any) -> str | None:
    """A version string as a tool prints one, else None (nothing else of the agent's)."""
    return value if isinstance(value, str) and _VERSION.fullmatch(value) else None


def bounded(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
