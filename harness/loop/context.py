"""What one `harness run` (or decision) hands every goal it advances."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO

from harness.loop.clock import Clock
from harness.loop.control import Control
from harness.store.remote import Remote
from harness.trust.secret import Secret


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
