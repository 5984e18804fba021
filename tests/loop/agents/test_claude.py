"""agents.claude: Claude Code 2.1.332's real output, per process and on a resumed session."""

from __future__ import annotations

import pytest

from harness.loop.agents import parse_output
from harness.loop.agents.claude import NO_RESULT
from harness.loop.agents.usage import Scope
from tests.loop.agents.captures import capture

SERVER_529 = (
    "API Error: 529 scripted 529. This is a server-side issue, usually temporary — try again "
    "in a moment. If it persists, check your inference gateway (127.0.0.1:36479)."
)
SERVER_500 = (
    "API Error: 500 scripted 500. This is a server-side issue, usually temporary — try again "
    "in a moment. If it persists, check your inference gateway (127.0.0.1:41053)."
)


@pytest.mark.parametrize(
    ("name", "cost", "turns", "scope", "floor", "evidence"),
    [
        ("text-1.out", 0.005, 1, "process", 0.005, "modelUsage 1050 tokens = usage 1050"),
        (
            "edit-allowed.out",
            0.040600000000000004,
            4,
            "process",
            0.040600000000000004,
            "modelUsage 8910 tokens = usage 8910",
        ),
        (
            "edit-streamjson.out",
            0.040600000000000004,
            4,
            "process",
            0.040600000000000004,
            "modelUsage 8910 tokens = usage 8910",
        ),
        ("resume-1.out", 0.005, 1, "process", 0.005, "modelUsage 1050 tokens = usage 1050"),
        # --resume: total_cost_usd and modelUsage are the session's, usage this process's
        ("resume-2.out", 0.01, 1, "session", 0.005, "modelUsage 2100 tokens > usage 1050"),
        ("resume-3-stream.out", 0.015, 1, "session", 0.005, "modelUsage 3150 tokens > usage 1050"),
        # a truncated stream retried inside one process: modelUsage counts the lost attempt
        (
            "sse-truncated.out",
            0.00088,
            2,
            "session",
            0.000866667,
            "modelUsage 132 tokens > usage 130",
        ),
    ],
)
def test_real_results(
    name: str, cost: float, turns: int, scope: Scope, floor: float, evidence: str
) -> None:
    usage = parse_output("claude-json", capture("claude", name).decode())
    assert (usage.cost_usd, usage.turns, usage.cost_scope) == (cost, turns, scope)
    assert usage.cost_floor_usd == floor
    assert usage.session_cost_usd == cost
    assert usage.evidence is not None and evidence in usage.evidence
    assert usage.unavailable is None and usage.error is None


def test_resumed_session_keeps_its_id() -> None:
    ids = {
        parse_output("claude-json", capture("claude", name).decode()).session
        for name in ("resume-1.out", "resume-2.out", "resume-3-stream.out")
    }
    assert ids == {"01c48cc0-be4a-4669-8a27-fa8ff64c01f6"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("err-529-default.out", SERVER_529),
        ("err-500-r2.out", SERVER_500),
        ("err-429-r2.out", "API Error: Request rejected (429) · scripted 429"),
        ("err-429-then-ok.out", None),  # retried inside claude, then answered
        ("text-1.out", None),
    ],
)
def test_api_failure_is_detected(name: str, message: str | None) -> None:
    usage = parse_output("claude-json", capture("claude", name).decode())
    assert usage.unavailable == message
    # subtype stays "success" on an API failure: is_error is what says it failed
    assert usage.error == ("is_error" if message else None)


def test_killed_build_prints_no_result() -> None:
    usage = parse_output("claude-json", capture("claude", "kill.out").decode())
    assert (usage.cost_usd, usage.turns, usage.error) == (None, None, NO_RESULT)


def test_more_assistant_messages_than_num_turns_count_more() -> None:
    stream = (
        capture("claude", "edit-streamjson.out").decode().replace('"num_turns":4', '"num_turns":2')
    )
    usage = parse_output("claude-json", stream)
    assert usage.turns == 4
    assert usage.evidence is not None and usage.evidence.endswith(
        "turns: 4 assistant messages printed"
    )


@pytest.mark.parametrize(
    ("stdout", "cost", "turns", "error"),
    [
        ("", None, None, NO_RESULT),
        ("Error: not logged in\n", None, None, NO_RESULT),
        ('{"type":"result","num_turns":', None, None, NO_RESULT),
        ('{"type":"result","total_cost_usd":NaN}', None, None, NO_RESULT),
        (
            '{"type":"result","subtype":"success","total_cost_usd":-2,"num_turns":true}',
            None,
            None,
            None,
        ),
        (
            '{"type":"result","subtype":"success","num_turns":1}\n'
            '{"type":"result","subtype":"error_during_execution","num_turns":2}\n',
            None,
            2,
            "error_during_execution",
        ),
        (
            '[{"type":"result","num_turns":1},{"type":"result","num_turns":2},{"type":"user"}]',
            None,
            2,
            None,
        ),
        ('{"type":"result","total_cost_usd":0.3,"num_turns":3}', 0.3, 3, None),
    ],
)
def test_malformed_output(
    stdout: str, cost: float | None, turns: int | None, error: str | None
) -> None:
    usage = parse_output("claude-json", stdout)
    assert (usage.cost_usd, usage.turns, usage.error) == (cost, turns, error)
    if cost is not None:
        # no usage/modelUsage to compare: the total is taken whole (count more)
        assert usage.cost_scope == "process"
        assert (
            usage.evidence
            == "cost: no usage and modelUsage to compare, taken whole; turns: num_turns"
        )
