"""Issue 30, item 2: a recurring goal's schedule is anchored, not the last start plus `every`.

Nights are simulated with the harness's own clock override (`HARNESS_NOW`): every tick is a
real `harness run` process whose wall clock starts at the tick's time and runs on at real
speed, so its events are stamped a second or more after the tick, as a cron's are.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from tests.managed import ManagedFactory, ManagedRepo, base_goal

DAY = timedelta(days=1)
FIRST_NIGHT = datetime.fromisoformat("2030-01-01T02:00:00+00:00")


def nightly(repo_factory: ManagedFactory) -> ManagedRepo:
    return repo_factory(goal=base_goal() | {"every": "24h"}, mode="fix-on-1")


def tick(repo: ManagedRepo, when: datetime) -> dict[str, Any]:
    """One scheduler tick: `harness run` at `when`; returns the goal's status row then."""
    at = {"HARNESS_NOW": when.isoformat().replace("+00:00", "Z")}
    repo.harness("run", check=0, env=repo.env | at)
    shown = repo.harness("status", "--json", check=0, env=repo.env | at)
    (row,) = json.loads(shown.stdout)
    return dict(row)


def starts(repo: ManagedRepo) -> list[dict[str, Any]]:
    """The events that begin a run (`goal.started`, `run.started`), oldest first."""
    rows = []
    for segment in sorted((repo.ledger_dir / "events").glob("*.jsonl")):
        rows += [json.loads(line)["e"] for line in segment.read_text().splitlines()]
    return [e for e in rows if e["type"] in ("goal.started", "run.started")]


def moment(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_ten_nights_at_two_run_once_each_and_the_due_time_never_drifts(
    managed: ManagedFactory,
) -> None:
    """`every: 24h` and a tick at 02:00 plus a few seconds: the first run is stamped after
    its tick, and later ticks arrive a little earlier or later than that. Each night runs
    exactly once, however early in its seconds the tick came (an hourly cron around it
    makes no second run), and every run stands for the first run's start plus whole days."""
    repo = nightly(managed)
    jitter = [3, 1, 2, 1, 3, 2, 1, 1, 2, 3]  # seconds after 02:00:00 the 02:00 tick arrives
    row = tick(repo, FIRST_NIGHT + timedelta(seconds=jitter[0]))
    assert (row["status"], row["run"]) == ("completed", 1)
    (first,) = starts(repo)
    anchor = moment(first["ts"])
    assert anchor >= FIRST_NIGHT + timedelta(seconds=jitter[0])
    assert row["next_run_due"] == _iso(anchor + DAY)
    for night in range(1, 10):
        two = FIRST_NIGHT + night * DAY
        early = tick(repo, two - timedelta(hours=1, seconds=-jitter[night]))
        assert (early["run"], early["runnable"]) == (night, False), early
        due = tick(repo, two + timedelta(seconds=jitter[night]))
        assert (due["status"], due["run"]) == ("completed", night + 1), due
        assert due["next_run_due"] == _iso(anchor + (night + 1) * DAY)
        late = tick(repo, two + timedelta(hours=1, seconds=jitter[night]))
        assert late["run"] == night + 1, late
    runs = starts(repo)
    assert [e["data"].get("run", 1) for e in runs] == list(range(1, 11))
    assert [e["data"]["due_at"] for e in runs[1:]] == [
        _iso(anchor + night * DAY) for night in range(1, 10)
    ]
    repo.verified()


def test_a_runner_away_for_three_nights_runs_once_then_keeps_its_time(
    managed: ManagedFactory,
) -> None:
    repo = nightly(managed)
    tick(repo, FIRST_NIGHT + timedelta(seconds=2))
    (first,) = starts(repo)
    anchor = moment(first["ts"])
    back = FIRST_NIGHT + 4 * DAY + timedelta(hours=9)  # nights 2, 3 and 4 missed; back at 11:00
    row = tick(repo, back)
    assert (row["run"], len(starts(repo))) == (2, 2)
    # It stands for the last of the missed times; the next is the first anchored one after now.
    assert starts(repo)[-1]["data"]["due_at"] == _iso(anchor + 4 * DAY)
    assert (row["next_run_due"], row["runnable"]) == (_iso(anchor + 5 * DAY), False)
    again = tick(repo, back + timedelta(minutes=30))  # caught up at most once
    assert (again["run"], len(starts(repo))) == (2, 2)
    row = tick(repo, FIRST_NIGHT + 5 * DAY + timedelta(seconds=1))
    assert row["run"] == 3
    assert starts(repo)[-1]["data"]["due_at"] == _iso(anchor + 5 * DAY)
    repo.verified()


def test_a_malformed_harness_now_is_a_usage_error_and_nothing_is_written(
    managed: ManagedFactory,
) -> None:
    repo = nightly(managed)
    expected = "(expected an ISO 8601 time with its zone, e.g. 2030-01-01T02:00:00Z)"
    for command in (["run"], ["status", "--json"], ["cancel", "g1"]):
        proc = repo.harness(*command, check=2, env=repo.env | {"HARNESS_NOW": "02:00 tonight"})
        assert proc.stdout == ""
        assert (
            proc.stderr
            == f"harness: HARNESS_NOW: '02:00 tonight' is not an ISO 8601 time {expected}\n"
        )
    assert not repo.worktree.exists()
    assert repo.count("build") == []


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
