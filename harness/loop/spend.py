"""Budget arithmetic: a goal's limits as recorded, what one build spent, what is left."""

from __future__ import annotations

from typing import Any

from harness.loop.agents import Usage
from harness.loop.agents.usage import Tokens
from harness.model.config import Prices
from harness.model.goal import Goal
from harness.record.cell import Cell, SessionTotals


def budget_limits(goal: Goal) -> dict[str, Any]:
    b = goal.budget
    return {
        "iterations": b.max_iterations,
        "seconds": b.max_seconds,
        "cost_usd": b.max_cost_usd,
        "turns": b.max_turns,
        "passes": goal.halt.max_passes,
    }


def recurrence(goal: Goal) -> dict[str, Any]:
    """`every_s` and `lifetime` for `goal.started`/`goal.revised` (none for a one-shot goal)."""
    if goal.every_s is None:
        return {}
    return {"every_s": goal.every_s, "lifetime": dict(goal.lifetime)}


def remaining_env(cell: Cell) -> dict[str, str]:
    """`HARNESS_BUDGET_*`: what is left of each limit as the step starts, never below 0.

    Iterations count the one running (its step.started is already folded in), so a
    build that is the last allowed sees 0.
    """
    used, limit = cell.used, cell.limit
    return {
        "HARNESS_BUDGET_ITERATIONS": str(max(0, limit.iterations - used.iterations)),
        "HARNESS_BUDGET_SECONDS": str(max(0, int(limit.seconds - used.seconds))),
        "HARNESS_BUDGET_COST_USD": _usd(max(0.0, limit.cost_usd - used.cost_usd)),
        "HARNESS_BUDGET_TURNS": str(max(0, limit.turns - used.turns)),
    }


def _usd(value: float) -> str:
    # Rounded down to the cent's hundredth, so a cap passed on is never above what is left.
    text = f"{int(value * 10_000) / 10_000:.4f}".rstrip("0").rstrip(".")
    return text or "0"


def increase(total: float | None, previous: float | None) -> float:
    """What a reported total proves was spent since `previous` (that session's last total).

    A new session's total is all new. A total below the last one means the tool restarted
    its count; it is taken whole, so the budget errs towards counting more, never less.
    """
    if total is None or total < 0:
        return 0
    if previous is None or total < previous:
        return total
    return total - previous


def token_increase(tokens: Tokens, previous: Tokens | None) -> Tokens:
    """A thread's running token totals as an increase; whole unless every figure grew."""
    if previous is None or any(now < before for now, before in zip(tokens, previous, strict=True)):
        return tokens
    return (tokens[0] - previous[0], tokens[1] - previous[1], tokens[2] - previous[2])


def spend_data(cell: Cell, usage: Usage, prices: Prices | None = None) -> dict[str, Any]:
    """Cost and turns of one build, counted once, plus the totals the next build needs."""
    before = _last(cell, usage.session)
    evidence = [usage.evidence] if usage.evidence else []
    cost = _cost(usage, before)
    tokens = usage.tokens
    if tokens is not None and usage.tokens_scope == "session":
        tokens = token_increase(tokens, before.tokens if before else None)
    if usage.cost_usd is None and tokens is not None:
        if prices is not None:
            cost = prices.cost(*tokens)
            evidence.append(f"priced {list(tokens)} tokens with the config's prices")
        else:
            evidence.append(f"{list(tokens)} tokens, no prices in the config: cost 0")
    data: dict[str, Any] = {"cost_usd": float(cost), "turns": int(usage.turns or 0)}
    if tokens is not None:
        data["tokens"] = list(tokens)  # this build's own, as counted (trace.md)
    if evidence:
        data["spend_evidence"] = "; ".join(evidence)[:1000]
    if usage.version:
        data["agent_version"] = usage.version  # as the tool said it (attest.md)
    if usage.session:
        data |= {
            "session": usage.session,
            "reported_cost_usd": usage.session_cost_usd,
            "reported_turns": usage.turns,
        }
        if usage.session_tokens is not None:
            data["reported_tokens"] = list(usage.session_tokens)
    return data


def _last(cell: Cell, session: str | None) -> SessionTotals | None:
    if not session:
        return None
    found = [entry for entry in cell.sessions if entry.name == session]
    return found[-1] if found else None


def _cost(usage: Usage, before: SessionTotals | None) -> float:
    if usage.cost_usd is None:
        return 0.0
    if usage.cost_scope == "process":
        return usage.cost_usd
    spent = increase(usage.cost_usd, before.cost_usd if before else None)
    return max(spent, usage.cost_floor_usd)
