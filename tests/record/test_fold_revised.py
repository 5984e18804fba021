"""The fold of `goal.revised` (issue 30, item 5): a revision recorded with `fresh_try` starts
the no-progress evidence again and puts the judge before a repair build, without spending a
round; one recorded before the key existed folds exactly as it always did."""

from __future__ import annotations

from typing import Any

from harness.record.cell import Cell
from harness.record.fold import fold
from tests.record.test_fold_runs import BUILT, FAILED_JUDGE, LIMITS, _events, _started

Row = tuple[str, str | None, int, dict[str, Any]]


def _round(iteration: int) -> list[Row]:
    """One build and its failing judge, on the same tree every time: no progress."""
    return [
        _step_started("build", iteration),
        ("step.finished", "build", iteration, BUILT[3]),
        _step_started("judge", iteration),
        ("step.finished", "judge", iteration, FAILED_JUDGE[3]),
    ]


def _step_started(step: str, iteration: int) -> Row:
    return ("step.started", step, iteration, {"call_id": f"{step}{iteration}", "base": "d" * 40})


STUCK: list[Row] = [
    _started(),
    *_round(1),
    *_round(2),
    ("goal.gated", None, 3, {"status": "needs_attention", "reason": "no_progress"}),
]


def _revised(**more: Any) -> Row:
    data = _started()[3] | {"goal_sha256": "f" * 64, "limits": LIMITS | {"iterations": 2}}
    return ("goal.revised", None, 3, data | more)


def _cell(*rows: Row) -> Cell:
    return fold("g1", _events(*rows))


def test_a_fresh_try_judges_first_and_keeps_the_round() -> None:
    stuck = _cell(*STUCK)
    assert (stuck.step, stuck.iteration, stuck.no_progress_count) == ("build", 3, 2)
    revised = _cell(*STUCK, _revised(fresh_try=True))
    assert (revised.status, revised.gate, revised.step, revised.iteration) == (
        "running",
        None,
        "judge",
        3,
    )
    assert (revised.no_progress_count, revised.no_progress_fingerprint) == (0, None)
    assert revised.used == stuck.used  # the budget is kept (G2)
    failed: Row = ("step.finished", "judge", 3, FAILED_JUDGE[3])
    after = _cell(*STUCK, _revised(fresh_try=True), _step_started("judge", 3), failed)
    # Round 3's build comes next, not round 4's: the re-run judge spent no round.
    assert (after.step, after.iteration, after.no_progress_count) == ("build", 3, 1)
    assert after.exhausted() == ["iterations"]  # the kept budget of 2 allows no round 3


def test_a_revision_recorded_before_fresh_try_folds_as_it_did() -> None:
    old = _cell(*STUCK, _revised())
    assert (old.step, old.iteration, old.no_progress_count) == ("build", 3, 2)


def test_a_fresh_try_leaves_a_goal_with_no_repair_next_at_its_step() -> None:
    first = _cell(_started(), _revised(fresh_try=True))  # nothing built yet: build first
    assert (first.step, first.iteration) == ("build", 1)
    cut = _cell(
        *STUCK[:-1], _step_started("build", 3), _revised(fresh_try=True)
    )  # the cut-off build resumes
    assert (cut.step, cut.in_flight is not None, cut.no_progress_count) == ("build", True, 0)


def test_a_revision_does_not_cross_egress_denied() -> None:
    # A gate about what a step did (issue 32): a new goal version (say, one that lists the
    # host) does not let the goal on; only the unpark bound to that state does.
    denied: Row = (
        "goal.gated",
        None,
        1,
        {"status": "parked_at_eyes", "reason": "egress_denied", "detail": "build[1] …"},
    )
    gated = [_started(), *_round(1)[:2], denied]
    revised = _cell(*gated, _revised(fresh_try=True))
    assert (revised.status, revised.gate) == ("parked_at_eyes", "egress_denied")
