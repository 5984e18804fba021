"""loop/progress.py: the live line of a running step on a terminal."""

from __future__ import annotations

import io
import threading

from harness.loop.progress import Progress


def test_a_step_started_again_keeps_one_line_and_stop_ends_it() -> None:
    """A step whose bwrap stopped before its command starts again (execute.py): the line
    is shown by one thread, which stop() ends, so nothing is written after it clears."""
    before = set(threading.enumerate())
    stream = io.StringIO()
    progress = Progress(stream, lambda elapsed: "g1 build[1] running")
    progress.start()
    progress.start()
    shown = set(threading.enumerate()) - before
    assert len(shown) == 1
    progress.stop()
    assert not any(thread.is_alive() for thread in shown)
    assert stream.getvalue().startswith("\r\x1b[Kg1 build[1] running")
    assert stream.getvalue().endswith("\r\x1b[K")


def test_no_terminal_no_thread() -> None:
    before = threading.active_count()
    progress = Progress(None, lambda elapsed: "never shown")
    progress.start()
    assert threading.active_count() == before
    progress.stop()
