"""What one `harness run` (or decision) hands every goal it advances."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from harness.loop.clock import Clock
from harness.loop.control import Control
from harness.store.remote import Remote
from harness.trust.redact import Redactor
from harness.trust.secret import Secret

if TYPE_CHECKING:
    from harness.loop.otel import LiveTrace


@dataclass(frozen=True)
class RunContext:
    control: Control
    secret: Secret
    clock: Clock
    print_line: Callable[[str], None]
    base_env: Mapping[str, str]
    max_steps: int | None = None
    remote: Remote | None = None
    runner: str = ""
    progress: TextIO | None = None  # a terminal to show the running step on
    trace: LiveTrace | None = None  # live export of spans (loop/otel.py), when asked for

    @functools.cached_property
    def redactor(self) -> Redactor:
        """The one redactor for what this run records and prints: the secrets the steps
        receive (names that say secret, and the config's `redact_env`) and token shapes."""
        return Redactor.for_env(self.base_env, self.control.config.redacted())
