"""What a scripted model answers: replies served in order, and the requests it got.

A test writes the conversation it wants (`Reply` values, in the order the tool will ask for
them) and reads back every request the tool made (`Request`). The protocol modules turn a
`Reply` into each API's wire format; nothing here knows any wire format.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FOREVER = -1


@dataclass(frozen=True)
class Tokens:
    """Usage figures a reply reports, as the APIs count them."""

    input: int = 1000
    output: int = 50
    cached: int = 0


@dataclass(frozen=True)
class ToolCall:
    """A tool call: `input` a mapping is a JSON-argument call; a string is a freeform call
    (the Responses API's custom_tool_call, codex's apply_patch)."""

    name: str
    input: Mapping[str, Any] | str


@dataclass(frozen=True)
class Request:
    """One request as the server got it; `protocol` is None for a path no API owns."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any  # parsed JSON, or None
    protocol: str | None
    status: int = 0  # what was answered
    reply: int | None = None  # index of the scripted reply used; None for the default

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text and/or tool calls, or an HTTP error when `status` != 200."""

    text: str | None = None
    tools: tuple[ToolCall, ...] = ()
    tokens: Tokens = field(default_factory=Tokens)
    status: int = 200
    message: str = "scripted"  # the error message, when status != 200
    retry_after: float | None = None  # the retry-after header of an error
    repeat: int = 1  # how many requests this reply answers; FOREVER = every one
    delay_s: float = 0.0  # wait before answering
    when: Callable[[Request], bool] | None = None  # answers only requests it accepts
    # The text made from the request it answers (a model repeating what a tool printed).
    text_of: Callable[[Request], str] | None = None

    @property
    def failed(self) -> bool:
        return self.status != 200


def say(text: str, tokens: Tokens | None = None, **options: Any) -> Reply:
    return Reply(text=text, tokens=tokens or Tokens(), **options)


def call(name: str, args: Mapping[str, Any] | str, tokens: Tokens | None = None) -> Reply:
    return Reply(tools=(ToolCall(name, args),), tokens=tokens or Tokens())


def fail(status: int, retry_after: float | None = None, *, repeat: int = FOREVER) -> Reply:
    return Reply(
        status=status, message=f"scripted {status}", retry_after=retry_after, repeat=repeat
    )


class Script:
    """Replies served in order (each `repeat` times), then `default` for every later call."""

    def __init__(self, replies: Sequence[Reply] = (), default: Reply | None = None) -> None:
        self._replies = list(replies)
        self._left = [reply.repeat for reply in self._replies]
        self.default = default or say("OK")
        self._lock = threading.Lock()

    def extend(self, replies: Sequence[Reply]) -> None:
        with self._lock:
            self._replies += replies
            self._left += [reply.repeat for reply in replies]

    def pick(self, request: Request) -> tuple[int | None, Reply]:
        with self._lock:
            for index, reply in enumerate(self._replies):
                if self._left[index] == 0 or (reply.when and not reply.when(request)):
                    continue
                if self._left[index] > 0:
                    self._left[index] -= 1
                return index, reply
            return None, self.default

    @property
    def unused(self) -> list[int]:
        """Indexes of replies that still had answers left: a tool that asked less than the
        test expected."""
        with self._lock:
            return [i for i, left in enumerate(self._left) if left > 0]
