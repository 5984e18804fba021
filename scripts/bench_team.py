"""Team metrics for scripts/bench: many `harness run --push origin` runners through one
remote (tests/fanout.py, the scenario of tests/e2e/test_many_runners.py), 8 runners in 4
clones against 1 runner in 1 clone over the same 40 goals (fresh repositories each time).

- runners_8x4: one-line `sh` builds and judges, CPU-bound: at most 1.0 means the team is
  not slower than one runner (docs/specs/performance.md).
- runners_8x4_agents (issue 29): the same team with builds that wait 1 s first, as an
  agent waits on its model (the real case), against one runner with the same builds.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from bench import SECRET, Best, report, settle

TEAM_GOALS, TEAM_CLONES, TEAM_PER_CLONE = 40, 4, 2
AGENT_WAIT = "sleep 1"  # each build of runners_8x4_agents, before its one line


@contextlib.contextmanager
def waiting_builds(wait: str | None) -> Iterator[None]:
    """The scenario's goals with `wait` run before each build (none when None). The goal
    files are written from `tests.fanout.BUILD`, so it is changed for the block only; the
    build's counter line (each build run exactly once) is unchanged."""
    from tests import fanout

    original = fanout.BUILD
    if wait is not None:
        fanout.BUILD = f"{wait}; {original}"
    try:
        yield
    finally:
        fanout.BUILD = original


def team_run(
    base: Path, keys: Path, clones: int, per_clone: int, wait: str | None = None
) -> tuple[float, int]:
    """`clones` clones of a bare remote with TEAM_GOALS approved goals, `per_clone`
    runners in each, until no goal moves. Checks that every goal completed and each step
    ran once; returns the wall time and the number of steps."""
    from tests.fanout import Team, expected_steps, run_runners

    public = (keys / "owner.pub").read_text().strip()
    with waiting_builds(wait):
        team = Team.create(base, keys / "owner", public, SECRET, TEAM_GOALS, clones, 8)
    if wait is not None and wait not in (team.clones[0] / "goals" / "t01-1.yaml").read_text():
        raise SystemExit(f"bench: the goals' builds do not {wait}")
    runs = run_runners(team, per_clone)
    want = expected_steps(team.ids)
    if runs.failures() or team.remote_completed() != set(team.ids):
        raise SystemExit(f"bench: the runners failed: {[p.err for p in runs.failures()]}")
    for step in ("build", "judge"):
        once = {(g, i): n for (g, s, i), n in want.items() if s == step}
        if team.counted(step) != once:
            raise SystemExit(f"bench: a {step} ran other than once: {team.counted(step)}")
    shutil.rmtree(base, ignore_errors=True)
    return runs.seconds, want.total()


def bench_runners(base: Path, keys: Path, reps: int, metric: str = "runners_8x4") -> None:
    """The team against one runner; the ratio is the team's wall time over one runner's.
    Each side takes a minute or more, so `--reps N` makes N // 3 runs a side (at least 1)."""
    settle()
    wait = AGENT_WAIT if metric == "runners_8x4_agents" else None
    best = Best.of("one", "team")
    steps = 0
    for n in range(max(1, reps // 3)):
        seconds, steps = team_run(base / f"{metric}-one-{n}", keys, 1, 1, wait)
        best.add("one", seconds)
        team = base / f"{metric}-team-{n}"
        seconds, steps = team_run(team, keys, TEAM_CLONES, TEAM_PER_CLONE, wait)
        best.add("team", seconds)
    builds = f"builds that {wait} first" if wait else "one-line builds"
    report(
        metric,
        best["team"],
        best["one"],
        f"{TEAM_CLONES * TEAM_PER_CLONE} runners in {TEAM_CLONES} clones "
        f"{steps / best['team']:.2f} steps/s ({best['team']:.1f} s), 1 runner "
        f"{steps / best['one']:.2f} steps/s ({best['one']:.1f} s); {TEAM_GOALS} goals, "
        f"{steps} steps, {builds}, each run once (best of {len(best.sides['one'])})",
        "s",
        {
            "steps_per_s": steps / best["team"],
            "one_runner_steps_per_s": steps / best["one"],
        },
    )
