"""When live export starts (harness/loop/otel.py), and that it never raises into a run."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.loop.otel import GoalTrace, LiveTrace, live_trace, wanted
from harness.record.ledger import Ledger
from harness.record.trace import Span

ENDPOINT = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT + "/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_export_is_asked_for_by_the_sdk_s_own_variables(
    env: dict[str, str], expected: bool
) -> None:
    assert wanted(env) is expected


def test_an_exporter_that_cannot_start_is_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    # A credential provider the SDK cannot find: its exporter refuses to be made.
    monkeypatch.setenv("OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER", "missing")
    err = io.StringIO()
    assert live_trace({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, err) is None
    (warning,) = err.getvalue().splitlines()
    assert warning.startswith("harness: warning: the OpenTelemetry exporter could not start: ")
    assert warning.endswith("; this run exports no spans") and "'missing'" in warning


class _Broken:
    """A sink whose SDK raises on everything (what a bug in it would do)."""

    def send(self, goal_id: str, spans: Sequence[Span]) -> None:
        raise RuntimeError("encoder exploded")

    def close(self, wait_s: float) -> str | None:
        raise RuntimeError("shutdown exploded")


def test_a_sink_that_raises_never_raises_into_the_run() -> None:
    err = io.StringIO()
    trace = LiveTrace(_Broken(), err)
    trace.goal("g1").send([])
    trace.close()
    assert err.getvalue().splitlines() == [
        "harness: traces: g1: spans not sent: encoder exploded",
        "harness: traces: the exporter failed to stop: shutdown exploded",
    ]


def test_a_goal_s_spans_wait_for_release_and_go_with_dropped_lines(tmp_path: Path) -> None:
    """The spans an event ends are sent when the recorder prints its line (after the push,
    with --push), and dropped with the lines of a run that lost the goal (remote.md)."""
    ledger = Ledger(tmp_path, "g1", b"k" * 32)
    ledger.load()
    sent: list[list[str]] = []
    trace = GoalTrace("g1", lambda spans: sent.append([s.name for s in spans]), print)
    stamp = "2030-01-01T00:00:00.000Z"
    trace.seed(ledger.append("goal.started", None, 0, {}, stamp))
    for step in ("build", "judge"):
        trace.add(ledger.append("step.started", step, 1, {"call_id": step}, stamp))
        trace.add(ledger.append("step.finished", step, 1, {"call_id": step}, stamp))
        assert sent == ([] if step == "build" else [["invoke_agent g1"]])
        if step == "build":
            trace.release()
    trace.drop()
    trace.release()
    assert sent == [["invoke_agent g1"]]
