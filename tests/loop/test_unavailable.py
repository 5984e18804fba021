"""A build whose model API failed is its own outcome (loop.md, "Agent unavailable"): no
iteration spent, no judge, a later try after a backoff, and after the bounded tries a gate
naming the cause. The agent is a real script printing Claude Code's real failure output
(tests/outage.py), read by the real claude-json parser; the clock is fixed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import pytest

from harness.loop.agents import parse_output
from harness.record.cell import Cell, Unavailable, _mac, cell_bytes, parse_cell
from harness.record.ledger import Ledger
from harness.record.render import replay_chunks
from harness.store.fsutil import canonical_json
from tests.inprocess import InProcess
from tests.managed import ManagedRepo, git
from tests.outage import (
    CAPTURES,
    MESSAGE_429,
    MESSAGE_529,
    outage_files,
    outage_goal,
    plan_outcomes,
)

RunHere = Callable[..., InProcess]


def _here(managed: Callable[..., ManagedRepo], *outcomes: str, tries: int = 3) -> InProcess:
    repo = managed(goal=outage_goal(tries=tries), files=outage_files())
    plan_outcomes(repo, *outcomes)
    return InProcess(repo)


def _seconds(line: str) -> str:
    """A printed line with its measured duration (real wall time) replaced by `S`."""
    return re.sub(r" [0-9]+\.[0-9]s ", " Ss ", line)


def test_an_unavailable_build_spends_no_iteration_and_runs_no_judge(
    managed: Callable[..., ManagedRepo],
) -> None:
    here = _here(managed, "529")
    cell = here.runner().advance()
    assert (cell.status, cell.step, cell.iteration, cell.gate) == ("running", "build", 1, None)
    assert cell.unavailable == Unavailable(1, 3, MESSAGE_529, "2030-01-01T00:01:03.000Z")
    # The round is not counted; the pass, the turn claude reported and the seconds are.
    assert (cell.used.iterations, cell.used.passes, cell.used.turns) == (0, 1, 1)
    assert cell.used.cost_usd == 0.0 and cell.used.seconds > 0
    events = here.events()
    assert [(e.type, e.step, e.iteration) for e in events] == [
        ("goal.started", None, 0),
        ("step.started", "build", 1),
        ("step.finished", "build", 1),
    ]
    finished = events[2].data
    assert {k: finished[k] for k in ("result", "exit_code", "unavailable", "retry_at")} == {
        "result": "unavailable",
        "exit_code": 1,
        "unavailable": MESSAGE_529,
        "retry_at": "2030-01-01T00:01:03.000Z",
    }
    assert (finished["unavailable_try"], finished["unavailable_tries"]) == (1, 3)
    assert finished["changed"] == ["partial.txt"]
    assert _seconds(here.lines[-1]) == (
        "2030-01-01T00:00:04.000Z g1 #3 build[1] unavailable exit=1 Ss cost=$0.0000 turns=1 "
        f"changed=1 (try 1 of 3, next after 2030-01-01T00:01:03.000Z): {MESSAGE_529}\n"
    )
    assert here.repo.count("build") == ["1"] and here.repo.count("judge") == []
    # What the build did is kept and committed, like a cut-off build's work in progress.
    wt = here.repo.worktree
    assert git(wt, "log", "-1", "--format=%s") == "harness(g1): build 1 unavailable (try 1)"
    assert git(wt, "show", "HEAD:partial.txt") == "529"


def test_a_run_before_the_try_is_due_leaves_the_goal_alone(
    managed: Callable[..., ManagedRepo],
) -> None:
    here = _here(managed, "529")
    here.runner().advance()
    head = git(here.repo.worktree, "rev-parse", "HEAD")
    printed = len(here.lines)
    cell = here.advance()  # the whole path, as `harness run` takes it
    assert (cell.status, cell.step, cell.unavailable is not None) == ("running", "build", True)
    assert len(here.events()) == 3 and len(here.lines) == printed  # no goal.resumed either
    assert git(here.repo.worktree, "rev-parse", "HEAD") == head
    assert here.repo.count("build") == ["1"]


def test_tries_back_off_then_a_build_that_reaches_the_model_goes_on(
    managed: Callable[..., ManagedRepo],
) -> None:
    here = _here(managed, "529", "429")
    here.runner().advance()
    here.clock.moment += timedelta(minutes=1)
    cell = here.advance()
    # The second try waits twice as long.
    assert cell.unavailable == Unavailable(2, 3, MESSAGE_429, "2030-01-01T00:03:11.000Z")
    assert (cell.iteration, cell.used.iterations, cell.used.passes) == (1, 0, 2)
    here.clock.moment += timedelta(minutes=2)
    cell = here.advance()
    assert (cell.status, cell.iteration, cell.unavailable) == ("completed", 1, None)
    assert (cell.used.iterations, cell.used.passes, cell.used.turns) == (1, 4, 1 + 1 + 4)
    assert cell.used.cost_usd == 0.040600000000000004  # what claude printed, exactly
    assert [(e.type, e.step, e.data.get("result")) for e in here.events()[3:]] == [
        ("goal.resumed", None, None),
        ("step.started", "build", None),
        ("step.finished", "build", "unavailable"),
        ("goal.resumed", None, None),
        ("step.started", "build", None),
        ("step.finished", "build", None),
        ("step.started", "judge", None),
        ("step.finished", "judge", "pass"),
        ("goal.completed", None, None),
    ]
    assert here.repo.count("build") == ["1", "1", "1"] and here.repo.count("judge") == ["1"]


def test_after_the_bounded_tries_the_goal_stops_at_agent_unavailable(
    managed: Callable[..., ManagedRepo],
) -> None:
    here = _here(managed, "529", "429", "529")
    here.runner().advance()
    for minutes in (1, 2):
        here.clock.moment += timedelta(minutes=minutes)
        here.advance()
    cell = here.advance()  # the third try is due at once: 2 minutes after the second
    assert (cell.status, cell.gate) == ("needs_attention", "agent_unavailable")
    assert cell.gate_detail == f"the model API failed on 3 tries in a row: {MESSAGE_529}"
    assert cell.unavailable == Unavailable(3, 3, MESSAGE_529, None)
    assert (cell.step, cell.iteration, cell.used.iterations, cell.used.passes) == ("build", 1, 0, 3)
    assert here.repo.count("build") == ["1", "1", "1"] and here.repo.count("judge") == []
    last = here.events()[-2]
    assert (last.data["result"], "retry_at" in last.data) == ("unavailable", False)
    assert _seconds(here.lines[-2]).endswith(f"changed=1 (try 3 of 3): {MESSAGE_529}\n")
    assert here.lines[-1].endswith(
        f"needs_attention gate=agent_unavailable (the model API failed on 3 tries in a row: "
        f"{MESSAGE_529})\n"
    )
    report = (here.repo.ledger_dir / "report.md").read_text()
    assert "| gate | agent_unavailable |\n" in report
    assert f"| agent | model API unavailable (try 3 of 3): {MESSAGE_529} |\n" in report
    # G3: the stopped goal stays stopped; another run appends nothing and runs nothing.
    count = len(here.events())
    here.clock.moment += timedelta(hours=5)
    assert here.advance().gate == "agent_unavailable"
    assert len(here.events()) == count and here.repo.count("build") == ["1", "1", "1"]
    # The report is what a replay of the ledger renders (G6).
    ledger = Ledger(here.paths.events, "g1", here.key)
    replayed = b"".join(replay_chunks(ledger.records(), "g1", "md")).decode()
    assert replayed == report


@pytest.mark.parametrize(
    ("capture", "expected"),
    [
        ("claude-529.out", MESSAGE_529),
        ("claude-429.out", MESSAGE_429),
        (
            "claude-500.out",
            "API Error: 500 scripted 500. This is a server-side issue, usually temporary — try "
            "again in a moment. If it persists, check your inference gateway (127.0.0.1:41053).",
        ),
        ("claude-ok.out", None),
    ],
)
def test_claude_json_reads_an_api_failure_from_the_real_output(
    capture: str, expected: str | None
) -> None:
    usage = parse_output("claude-json", (CAPTURES / capture).read_text())
    assert usage.unavailable == expected
    # Whatever the outcome, what claude reported is still read (and counted).
    assert (usage.turns, usage.cost_usd) == (
        (4, 0.040600000000000004) if expected is None else (1, 0)
    )


def test_a_cell_written_before_the_field_reads_as_none_and_the_record_round_trips() -> None:
    key = b"k" * 32
    old = json.loads(cell_bytes(Cell(goal="g1"), key))
    del old["unavailable"], old["mac"]
    old["mac"] = _mac(key, "g1", canonical_json(old))
    assert parse_cell(canonical_json(old), "old", "g1", key).unavailable is None
    waiting = Unavailable(2, 3, MESSAGE_429, "2030-01-01T00:03:11.000Z")
    cell = replace(Cell(goal="g1"), unavailable=waiting)
    assert parse_cell(cell_bytes(cell, key), "new", "g1", key) == cell
    assert (
        waiting.waiting("2030-01-01T00:03:10.999Z"),
        waiting.waiting(waiting.retry_at or ""),
    ) == (
        True,
        False,
    )
