"""The live line a terminal shows while a step runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from harness.record.cell import Cell


class Progress:
    """A live line on a terminal (stderr) while a step runs; nothing at all otherwise, so
    what goes to stdout and to files never changes."""

    def __init__(self, stream: TextIO | None, text: Callable[[float], str]) -> None:
        self.stream, self.text = stream, text
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Show the line, once: a step started again (its bwrap stopped before the command,
        `execute.StepCommands.run_contained`) keeps the line it has."""
        if self.stream is not None and self.thread is None:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        began = time.monotonic()
        assert self.stream is not None
        while True:
            self.stream.write("\r\x1b[K" + self.text(time.monotonic() - began))
            self.stream.flush()
            if self.done.wait(1.0):
                return

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None and self.stream is not None:
            self.thread.join()
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def progress_text(goal_id: str, step: str, iteration: int, cell: Cell) -> Callable[[float], str]:
    """The live line's text for a step that has run `elapsed` seconds."""
    used, limit = cell.used, cell.limit

    def text(elapsed: float) -> str:
        minutes, seconds = divmod(int(elapsed), 60)
        return (
            f"{goal_id} {step}[{iteration}] {minutes:02d}:{seconds:02d} · "
            f"iterations {used.iterations}/{limit.iterations} · "
            f"cost ${used.cost_usd:.2f}/${limit.cost_usd:.2f} · passes {used.passes}/{limit.passes}"
        )

    return text
