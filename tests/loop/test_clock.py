"""The loop's clock: the system clock, and HARNESS_NOW setting it for dry runs and tests."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

from harness.errors import InvalidInput
from harness.loop.clock import SystemClock


def _moment(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_harness_now_sets_the_wall_clock_which_then_runs_on() -> None:
    env = {"HARNESS_NOW": "2030-01-01T02:00:00+01:00"}
    first = SystemClock(env).now()
    time.sleep(0.05)
    later = SystemClock(env).now()  # another clock of the process reads the same time on
    start = _moment("2030-01-01T01:00:00Z")
    assert first.endswith("Z") and start <= _moment(first) < start + timedelta(seconds=5)
    assert _moment(later) - _moment(first) >= timedelta(seconds=0.05)


def test_without_harness_now_it_is_the_system_clock() -> None:
    for env in ({}, {"HARNESS_NOW": ""}, None):
        shown = _moment(SystemClock(env).now())
        assert abs(shown - datetime.now(shown.tzinfo)) < timedelta(seconds=5)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("tomorrow", "is not an ISO 8601 time"),
        ("2030-13-01T02:00:00Z", "is not an ISO 8601 time"),
        ("2030-01-01T02:00:00", "names no zone"),
    ],
)
def test_a_malformed_harness_now_is_refused_by_name(value: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        SystemClock({"HARNESS_NOW": value})
    assert str(caught.value) == (
        f"HARNESS_NOW: {value!r} {problem} "
        "(expected an ISO 8601 time with its zone, e.g. 2030-01-01T02:00:00Z)"
    )
    assert caught.value.exit_code == 2
