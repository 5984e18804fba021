"""A big team (issue 15, done-when 6): 8 runners in 4 clones of one bare remote, over 40
goals, all at once. Every step runs exactly once in total, and the remote's history
verifies in a fresh clone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.fanout import Team, expected_steps, run_runners, step_runs
from tests.managed import SECRET, Key

GOALS, CLONES, PER_CLONE = 40, 4, 2


def test_eight_runners_in_four_clones_run_each_step_once(owner_key: Key, tmp_path: Path) -> None:
    team = Team.create(
        tmp_path, owner_key.private, owner_key.public, SECRET, GOALS, CLONES, two_iterations_every=8
    )
    runs = run_runners(team, PER_CLONE)
    assert runs.failures() == [], [(p.code, p.err) for p in runs.failures()]
    assert team.remote_completed() == set(team.ids)
    want = expected_steps(team.ids)
    # The counters the steps bump outside the repository: each ran exactly once.
    assert team.counted("build") == {(g, i): n for (g, s, i), n in want.items() if s == "build"}
    assert team.counted("judge") == {(g, i): n for (g, s, i), n in want.items() if s == "judge"}
    # The work was shared: more than one runner, and more than one clone, moved goals.
    movers = {p.runner for p in runs.passes if " started" in p.out}
    assert len({(n - 1) // PER_CLONE for n in movers}) > 1, movers
    # The remote's record of each goal: one start and one finish per step, none cut off.
    auditor = team.auditor()
    for goal_id in team.ids:
        counts = step_runs(team.events(auditor, goal_id))
        mine = {(s, i): n for (g, s, i), n in want.items() if g == goal_id}
        assert counts["step.started"] == mine, (goal_id, counts)
        assert counts["step.finished"] == mine, (goal_id, counts)
        assert counts["step.cutoff"] == {}, (goal_id, counts)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "verify"],
        cwd=auditor,
        env=team.env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == GOALS
    assert all(
        re.match(r"ok t\d\d-\d: \d+ events, head \d+:\w+, status completed", x) for x in lines
    )
