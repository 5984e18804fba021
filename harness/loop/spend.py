"""Budget arithmetic: a goal's limits as recorded, and what one build spent."""

from __future__ import annotations

from typing import Any

from harness.loop.agents import Usage
from harness.model.goal import Goal
from harness.record.cell import Cell


def budget_limits(goal: Goal) -> dict[str, Any]:
    b = goal.budget
    return {
        "iterations": b.max_iterations,
        "seconds": b.max_seconds,
        "cost_usd": b.max_cost_usd,
        "turns": b.max_turns,
        "passes": goal.halt.max_passes,
    }


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


def spend_data(cell: Cell, usage: Usage) -> dict[str, Any]:
    """Cost and turns of one build as increases, plus the raw totals the next one needs."""
    last = {name: (cost, turns) for name, cost, turns in cell.sessions}
    before = last.get(usage.session) if usage.session else None
    cost = increase(usage.cost_usd, before[0] if before else None)
    turns = increase(usage.turns, before[1] if before else None)
    data: dict[str, Any] = {"cost_usd": float(cost), "turns": int(turns)}
    if usage.session:
        data |= {
            "session": usage.session,
            "reported_cost_usd": usage.cost_usd,
            "reported_turns": usage.turns,
        }
    return data
