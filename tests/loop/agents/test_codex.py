"""agents.codex: Codex 0.171.0's real `exec --json` events."""

from __future__ import annotations

import pytest

from harness.loop.agents import parse_output
from harness.loop.agents.codex import NO_EVENTS
from tests.loop.agents.captures import capture

THREAD = "01a230da-af36-7401-8a99-6c82c022acd4"
DEMAND = "We’re currently experiencing high demand, which may cause temporary errors."


@pytest.mark.parametrize(
    ("name", "turns", "tokens"),
    [
        ("edit-ww.out", 1, (4300, 0, 110)),
        ("resume-1.out", 1, (1000, 0, 50)),
        # `exec resume`: the thread's running total, each request really used 1000/50
        ("resume-2.out", 1, (2000, 0, 100)),
        ("resume-3.out", 1, (3000, 0, 150)),
        ("sse-nocompleted.out", 1, (100, 0, 20)),
        ("sse-nousage.out", 1, (0, 0, 0)),
    ],
)
def test_real_turns_and_tokens(name: str, turns: int, tokens: tuple[int, int, int]) -> None:
    usage = parse_output("codex-jsonl", capture("codex", name).decode())
    assert (usage.cost_usd, usage.turns, usage.tokens, usage.session_tokens) == (
        None,
        turns,
        tokens,
        tokens,
    )
    assert usage.tokens_scope == "session"
    assert usage.unavailable is None


def test_resumed_thread_keeps_its_id() -> None:
    ids = {
        parse_output("codex-jsonl", capture("codex", f"resume-{i}.out").decode()).session
        for i in (1, 2, 3)
    }
    assert ids == {THREAD}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("err-500-r1.out", DEMAND),
        ("err-500-default.out", DEMAND),
        ("err-429-r1.out", "exceeded retry limit, last status: 429 Too Many Requests"),
        ("err-429-then-ok-r1.out", None),  # a Reconnecting notice, then a completed turn
        ("sse-nocompleted.out", None),
        ("kill.out", None),  # killed mid-turn with no error printed
    ],
)
def test_api_failure_is_detected(name: str, message: str | None) -> None:
    assert parse_output("codex-jsonl", capture("codex", name).decode()).unavailable == message


def test_errors_are_kept_bounded() -> None:
    usage = parse_output("codex-jsonl", capture("codex", "err-500-default.out").decode())
    assert usage.error == (
        f"error: Reconnecting... 1/5 ({DEMAND}); error: Reconnecting... 2/5 ({DEMAND}); "
        f"error: Reconnecting... 3/5 ({DEMAND}); turn.failed: {DEMAND}"
    )


@pytest.mark.parametrize(
    ("stdout", "turns", "error"),
    [
        ("", None, NO_EVENTS),
        ("codex: command not found\n", None, NO_EVENTS),
        ('{"type":"turn.completed"', None, NO_EVENTS),
        ('[… 512 bytes truncated]\nd":"x"}}\n{"type":"turn.completed"}\n', 1, None),
        ('{"type":"turn.failed"}\n', 0, "turn.failed"),
    ],
)
def test_malformed_output(stdout: str, turns: int | None, error: str | None) -> None:
    usage = parse_output("codex-jsonl", stdout)
    assert (usage.turns, usage.error) == (turns, error)


def test_a_failed_turn_without_a_message_is_still_unavailable() -> None:
    assert parse_output("codex-jsonl", '{"type":"turn.failed"}\n').unavailable == "turn.failed"
