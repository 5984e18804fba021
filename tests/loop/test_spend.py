"""spend: a build's spend counted once, whatever the tool reports, and what is left."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.loop.agents import Usage, parse_output
from harness.loop.spend import remaining_env, spend_data
from harness.model.config import Prices
from harness.record.cell import Cell, SessionTotals, Spend
from tests.loop.agents.captures import capture

SESSION = "01c48cc0-be4a-4669-8a27-fa8ff64c01f6"
THREAD = "01a230da-af36-7401-8a99-6c82c022acd4"
PRICES = Prices(1.0, 0.5, 4.0)


def _cell(*sessions: SessionTotals) -> Cell:
    return Cell(goal="g1", sessions=sessions)


def _claude(name: str) -> Usage:
    return parse_output("claude-json", capture("claude", name).decode())


def _codex(name: str) -> Usage:
    return parse_output("codex-jsonl", capture("codex", name).decode())


def test_claude_two_builds_on_one_resumed_session_count_each_once() -> None:
    first = spend_data(_cell(), _claude("resume-1.out"))
    assert (first["cost_usd"], first["turns"], first["reported_cost_usd"]) == (0.005, 1, 0.005)
    second = spend_data(_cell(SessionTotals(SESSION, 0.005, 1)), _claude("resume-2.out"))
    assert (second["cost_usd"], second["turns"]) == (0.005, 1)
    assert second["reported_cost_usd"] == 0.01
    assert second["spend_evidence"] == (
        "cost: modelUsage 2100 tokens > usage 1050, a session total; turns: num_turns"
    )


def test_claude_session_total_without_a_previous_record_is_taken_whole() -> None:
    assert spend_data(_cell(), _claude("resume-2.out"))["cost_usd"] == 0.01


def test_claude_subtraction_never_goes_below_this_process_share() -> None:
    # A previous record too large (another harness, a lost event): the tokens still prove 0.005.
    data = spend_data(_cell(SessionTotals(SESSION, 0.0095, 1)), _claude("resume-2.out"))
    assert data["cost_usd"] == 0.005


def test_claude_per_process_cost_is_whole_even_on_a_known_session() -> None:
    usage = replace(_claude("resume-1.out"))
    data = spend_data(_cell(SessionTotals(SESSION, 0.004, 1)), usage)
    assert data["cost_usd"] == 0.005


def test_codex_resumed_thread_counts_each_build_once() -> None:
    first = spend_data(_cell(), _codex("resume-1.out"), PRICES)
    # 1000 input at $1/M + 50 output at $4/M
    assert (first["cost_usd"], first["turns"], first["reported_tokens"]) == (
        0.0012,
        1,
        [1000, 0, 50],
    )
    before = SessionTotals(THREAD, 0.0, 1, (1000, 0, 50))
    second = spend_data(_cell(before), _codex("resume-2.out"), PRICES)
    assert (second["cost_usd"], second["turns"], second["reported_tokens"]) == (
        0.0012,
        1,
        [2000, 0, 100],
    )
    assert second["spend_evidence"].endswith("priced [1000, 0, 50] tokens with the config's prices")
    # Each build's own tokens, the session total's earlier part subtracted (trace.md).
    assert first["tokens"] == second["tokens"] == [1000, 0, 50]


def test_codex_totals_that_shrank_are_taken_whole() -> None:
    before = SessionTotals(THREAD, 0.0, 1, (5000, 0, 50))
    data = spend_data(_cell(before), _codex("resume-2.out"), PRICES)
    assert data["cost_usd"] == pytest.approx(0.0024)


def test_codex_without_prices_records_why_the_cost_is_zero() -> None:
    data = spend_data(_cell(), _codex("resume-1.out"))
    assert data["cost_usd"] == 0.0
    assert data["spend_evidence"].endswith("[1000, 0, 50] tokens, no prices in the config: cost 0")


def test_aider_cost_is_read() -> None:
    usage = parse_output("aider", capture("aider", "badedit.out").decode())
    assert spend_data(_cell(), usage) == {
        "cost_usd": 0.0009,
        "turns": 2,
        "spend_evidence": "cost: 2 'Cost: $… message' figures; turns: Tokens lines",
        "agent_version": "0.86.2",  # its first line, `Aider v0.86.2`
    }


@pytest.mark.parametrize(
    ("used", "limit", "expected"),
    [
        (
            Spend(1, 100.4, 0.0312, 7, 2),
            Spend(3, 7200, 0.10, 300, 50),
            ("2", "7099", "0.0688", "293"),
        ),
        (Spend(3, 9000, 0.5, 400, 9), Spend(3, 7200, 0.10, 300, 50), ("0", "0", "0", "0")),
        (Spend(0, 0, 0.0, 0, 0), Spend(3, 60, 20.0, 9, 9), ("3", "60", "20", "9")),
    ],
)
def test_remaining_budget_for_the_agent(
    used: Spend, limit: Spend, expected: tuple[str, ...]
) -> None:
    env = remaining_env(Cell(goal="g1", used=used, limit=limit))
    keys = ("ITERATIONS", "SECONDS", "COST_USD", "TURNS")
    assert env == {
        f"HARNESS_BUDGET_{key}": value for key, value in zip(keys, expected, strict=True)
    }
