"""`run --jobs`: what a goal's exit code is when its worker ends without answering."""

from __future__ import annotations

import signal

import pytest

from harness.commands.jobs import died


@pytest.mark.parametrize(
    ("ended", "code", "killer"),
    [
        (-signal.SIGKILL, 1, "SIGKILL"),
        (-signal.SIGSEGV, 1, "SIGSEGV"),
        (-signal.SIGINT, 130, "SIGINT"),  # the stop, as a shell reports it
        (-signal.SIGTERM, 143, "SIGTERM"),
        (-99, 1, "signal 99"),
    ],
)
def test_a_worker_killed_by_a_signal_is_said_and_exits_non_zero(
    ended: int, code: int, killer: str
) -> None:
    assert died("g1", 4242, ended) == (
        code,
        f"harness: g1: error: the `run --jobs` worker advancing it (pid 4242) was killed by "
        f"{killer}; the goal is as the kill left it and the next run resumes it",
    )


@pytest.mark.parametrize("ended", [1, 3, 130])
def test_a_worker_that_exited_said_why_itself(ended: int) -> None:
    assert died("g1", 4242, ended) == (ended, None)
