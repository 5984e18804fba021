"""advance_goal in this process: resting goals stay put, a changed goal file gates, and a
signed decision crosses exactly the gate it names."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from harness.trust.approvals import append_record
from harness.trust.sshsig import sign
from harness.trust.statement import Statement
from tests.inprocess import InProcess
from tests.managed import ManagedRepo, base_goal, git

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"']}
RunHere = Callable[..., InProcess]


@pytest.fixture
def run_here(managed: Callable[..., ManagedRepo]) -> RunHere:
    return lambda **kwargs: InProcess(managed(**kwargs))


@pytest.mark.parametrize(
    ("goal", "status"),
    [(base_goal() | {"ship": SHIP}, "parked_at_eyes"), (base_goal(), "completed")],
)
def test_resting_goal_is_left_as_it_is(
    run_here: RunHere, goal: dict[str, object], status: str
) -> None:
    here = run_here(mode="fix-on-1", goal=goal)
    first = here.advance()
    assert first.status == status
    head, printed, events = here.git_repo.rev_parse("harness/g1"), len(here.lines), here.types()
    again = here.advance()
    assert again == first
    assert here.git_repo.rev_parse("harness/g1") == head
    assert (len(here.lines), here.types()) == (printed, events)
    assert here.repo.count("build") == ["1"] and here.repo.count("ship") == []


def test_goal_file_changed_after_the_start_gates_at_goal_changed(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1")
    assert here.advance(max_steps=1).status == "running"
    here.repo.commit_goal_change(base_goal() | {"objective": "Something else.\n"})
    changed = hashlib.sha256((here.repo.root / "goals" / "g1.yaml").read_bytes()).hexdigest()
    cell = here.advance()
    assert (cell.status, cell.gate, cell.gate_detail) == (
        "needs_attention",
        "goal_changed",
        f"goals/g1.yaml changed after the run began (sha256 {changed[:12]}); approve the new version",
    )
    assert here.repo.count("build") == ["1"] and here.repo.count("judge") == []
    # Waiting already: a second run adds no second gate.
    assert here.advance() == cell


def _sign_decision(here: InProcess, decision: str) -> None:
    """What `harness ship` writes: a statement bound to the parked cell, committed to main."""
    cell = here.advance()
    statement = Statement(
        goal="g1",
        sha256=cell.goal_sha256 or "",
        decision=decision,
        commit=cell.gate_commit,
        ledger=str(cell.position),
    )
    armored = sign(statement.to_bytes(), here.repo.key.private)
    append_record(here.repo.root / "goals" / "g1.approval", statement, armored)
    git(here.repo.root, "commit", "-qam", f"{decision} g1")


def test_signed_decision_crosses_its_gate_once(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1", goal=base_goal() | {"ship": SHIP})
    parked = here.advance()
    assert (parked.status, parked.gate) == ("parked_at_eyes", "ship")
    _sign_decision(here, "ship")
    cell = here.advance()
    assert (cell.status, cell.gate) == ("completed", None)
    used = next(e for e in here.events() if e.type == "decision.used")
    assert (used.data["decision"], used.data["gate"], used.data["signers"]) == (
        "ship",
        "ship",
        ["owner@example.com"],
    )
    assert (used.data["commit"], used.data["ledger"]) == (
        parked.gate_commit,
        str(parked.position),
    )
    assert here.types()[-3:] == ["step.started", "step.finished", "goal.completed"]
    assert here.advance() == cell
    assert here.repo.count("ship") == ["shipped"]


def test_decision_for_another_gate_does_not_cross(run_here: RunHere) -> None:
    here = run_here(mode="fix-on-1", goal=base_goal() | {"ship": SHIP})
    _sign_decision(here, "unpark no_progress")
    cell = here.advance()
    assert (cell.status, cell.gate) == ("parked_at_eyes", "ship")
    assert "decision.used" not in here.types() and here.repo.count("ship") == []
