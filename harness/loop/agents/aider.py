"""`format: aider`: aider's plain-text output (0.86.2; it has no JSON mode).

After every model request aider prints `Tokens: 2.7k sent, 32 received.` and, when it
knows the model's price, `Cost: $0.0085 message, $0.0085 session.` (on the same line, or
on the next when it reports both cache writes and hits). `message` is that request's
cost and `session` the running total of this process: with `--message` there is no
session to resume, so the cost is this process's. It is the sum of the `message` costs,
or the last `session` figure when that is more (both are rounded as printed). Turns are
the `Tokens:` lines. Without a `Cost:` figure the tokens (rounded as printed: `2.7k`) are
priced with the config's `prices`.

The model API failed when a `litellm.<Name>Error: …` line is not followed by a
`Tokens:` line: aider retries for about a minute and then exits 0 anyway.
"""

from __future__ import annotations

import re

from harness.loop.agents.lines import Parser
from harness.loop.agents.usage import Tokens, Usage, bounded, version

_TOKENS = re.compile(
    r"^Tokens: (?P<sent>\d+(?:\.\d+)?[kM]?) sent, (?:.*, )?"
    r"(?P<received>\d+(?:\.\d+)?[kM]?) received\."
)
_COST = re.compile(
    r"Cost: \$(?P<message>\d+(?:\.\d+)?) message, \$(?P<session>\d+(?:\.\d+)?) session\."
)
_API_ERROR = re.compile(r"^litellm\.\w+: ")
_VERSION = re.compile(r"^Aider v(\S+)$")  # its first line
_SCALE = {"": 1, "k": 1_000, "M": 1_000_000}


class AiderParser(Parser):
    name = "aider"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.costs = 0  # `Cost:` figures seen
        self.message_sum = 0.0
        self.session_cost = 0.0
        self.tokens: Tokens = (0, 0, 0)
        self.failure: str | None = None
        self.version: str | None = None

    def line(self, text: str) -> None:
        named = _VERSION.match(text) if self.version is None else None
        if named:
            self.version = version(named[1])
        tokens = _TOKENS.match(text)
        if tokens:
            self.calls += 1
            sent, received = _amount(tokens["sent"]), _amount(tokens["received"])
            self.tokens = (self.tokens[0] + sent, 0, self.tokens[2] + received)
            self.failure = None
        priced = _COST.search(text)
        if priced:
            self.costs += 1
            self.message_sum += float(priced["message"])
            self.session_cost = max(self.session_cost, float(priced["session"]))
        if _API_ERROR.match(text):
            self.failure = bounded(text.strip())

    def result(self) -> Usage:
        spent = max(self.message_sum, self.session_cost) if self.costs else None
        if self.costs:
            evidence = f"cost: {self.costs} 'Cost: $… message' figures; turns: Tokens lines"
        else:
            evidence = "cost: no 'Cost:' figure, tokens as printed; turns: Tokens lines"
        return Usage(
            cost_usd=round(spent, 6) if spent is not None else None,
            turns=self.calls,
            summary=None,
            error=None,
            tokens=self.tokens if self.calls and not self.costs else None,
            evidence=evidence,
            unavailable=self.failure,
            version=self.version,
        )


def _amount(text: str) -> int:
    unit = text[-1] if text[-1] in _SCALE else ""
    number = text[: len(text) - len(unit)]
    return round(float(number) * _SCALE[unit])
