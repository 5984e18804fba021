"""agents.aider: aider 0.86.2's real text output: its Tokens and Cost lines, its API errors."""

from __future__ import annotations

import pytest

from harness.loop.agents import parse_output
from tests.loop.agents.captures import capture


@pytest.mark.parametrize(
    ("name", "cost", "turns", "tokens"),
    [
        ("edit-nostream.out", 0.003, 1, None),
        ("text-metadata.out", 0.0015, 1, None),
        ("err-429-then-ok.out", 0.00045, 1, None),
        # an edit that failed to apply, and aider's automatic reflection request
        ("badedit.out", 0.0009, 2, None),
        # an unknown model: no Cost part, the tokens as printed are priced by the config
        ("text-unknown.out", None, 1, (1000, 0, 50)),
        ("err-500.out", None, 0, None),
    ],
)
def test_real_costs(
    name: str, cost: float | None, turns: int, tokens: tuple[int, int, int] | None
) -> None:
    usage = parse_output("aider", capture("aider", name).decode())
    assert (usage.cost_usd, usage.turns, usage.tokens, usage.cost_scope) == (
        cost,
        turns,
        tokens,
        "process",
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "err-500.out",
            "litellm.InternalServerError: InternalServerError: OpenAIException - scripted 500",
        ),
        ("err-429.out", "litellm.RateLimitError: RateLimitError: OpenAIException - scripted 429"),
        ("err-429-then-ok.out", None),
        # the price list download failing (no network) is not the model API failing
        ("text-unknown.out", None),
        ("edit-nostream.out", None),
    ],
)
def test_api_failure_is_detected_despite_exit_0(name: str, message: str | None) -> None:
    assert parse_output("aider", capture("aider", name).decode()).unavailable == message


@pytest.mark.parametrize(
    ("lines", "cost", "tokens"),
    [
        # cache writes and hits: the Cost part goes on its own line (aider/coders/base_coder.py)
        (
            "Tokens: 12k sent, 2.5k cache write, 9.1k cache hit, 1.2k received.\n"
            "Cost: $0.05 message, $0.05 session.\n",
            0.05,
            None,  # priced by aider itself: the tokens are not priced again
        ),
        ("Tokens: 1.0M sent, 999 received.\n", None, (1_000_000, 0, 999)),
        # rounded figures: the larger of the summed messages and the session total wins
        (
            "Tokens: 10 sent, 1 received. Cost: $0.0012 message, $0.0012 session.\n"
            "Tokens: 10 sent, 1 received. Cost: $0.0012 message, $0.0025 session.\n",
            0.0025,
            None,
        ),
    ],
)
def test_token_and_cost_forms(
    lines: str, cost: float | None, tokens: tuple[int, int, int] | None
) -> None:
    usage = parse_output("aider", lines)
    assert (usage.cost_usd, usage.tokens) == (cost, tokens)
