"""A big team through one remote (issue 15): many `harness run --push origin` runners in
several clones of one bare remote, over many approved goals.

Shared by tests/e2e/test_many_runners.py and the `runners_8x4` metric of scripts/bench, so
the test and the bench run the same scenario. Every goal's build and judge are one-line
`sh` scripts (no interpreter to start); each appends `<goal> <iteration>` to a counter file
outside the repository, so a caller can count how often each step really ran.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.commands.approve import approve
from harness.commands.replay import replay

OWNER = "owner@example.com"
COUNTERS_ENV = "TEST_COUNTER_DIR"
# The build writes `wrong` before the goal's last iteration and `right` on it; the judge
# passes on `right`. A goal's id ending in -2 needs two iterations, the others one.
BUILD = (
    'printf "%s %s\\n" "$HARNESS_GOAL" "$HARNESS_ITERATION" >> "$TEST_COUNTER_DIR/build.log"; '
    'if [ "$HARNESS_ITERATION" -ge {need} ]; then echo right; else echo wrong; fi > value.txt'
)
JUDGE = (
    'printf "%s %s\\n" "$HARNESS_GOAL" "$HARNESS_ITERATION" >> "$TEST_COUNTER_DIR/judge.log"; '
    'grep -qx right value.txt || { echo "FAILED value.txt is $(cat value.txt)"; exit 1; }'
)


def goal_ids(count: int, two_iterations_every: int) -> list[str]:
    """`t01-1`, `t02-1`, …; every `two_iterations_every`-th goal needs two iterations."""
    return [
        f"t{n:02d}-{2 if two_iterations_every and n % two_iterations_every == 0 else 1}"
        for n in range(1, count + 1)
    ]


def goal_text(goal_id: str) -> str:
    need = int(goal_id.rsplit("-", 1)[1])
    goal = {
        "version": 1,
        "id": goal_id,
        "owner": OWNER,
        "objective": "Make value.txt say right.\n",
        "build": {"run": ["sh", "-c", BUILD.replace("{need}", str(need))], "timeout": "60s"},
        "judge": {"run": ["sh", "-c", JUDGE], "timeout": "60s"},
        "budget": {"max_iterations": 3},
        "halt": {"no_progress_passes": 2, "max_passes": 50},
    }
    return yaml.safe_dump(goal, sort_keys=False)


def expected_steps(ids: list[str]) -> Counter[tuple[str, str, int]]:
    """Each (goal, step, iteration) that must run exactly once for every goal to finish."""
    want: Counter[tuple[str, str, int]] = Counter()
    for goal_id in ids:
        for iteration in range(1, int(goal_id.rsplit("-", 1)[1]) + 1):
            want.update({(goal_id, "build", iteration): 1, (goal_id, "judge", iteration): 1})
    return want


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class Team:
    """A bare remote seeded with approved goals, and the clones runners work in."""

    base: Path
    bare: Path
    clones: list[Path]
    counters: Path
    env: dict[str, str]
    ids: list[str]

    @classmethod
    def create(
        cls,
        base: Path,
        private_key: Path,
        public_key: str,
        secret: str,
        goals: int,
        clones: int,
        two_iterations_every: int = 0,
    ) -> Team:
        """Goals approved with the real `harness approve` code (in-process: 40 signatures
        would otherwise be 40 interpreter starts), committed, pushed to a bare remote, and
        cloned `clones` times."""
        seed, counters, bare = base / "seed", base / "counters", base / "remote.git"
        seed.mkdir(parents=True)
        counters.mkdir()
        env = {
            **os.environ,
            "HARNESS_SECRET": secret,
            COUNTERS_ENV: str(counters),
            # The steps write their counters outside the repository, which a contained
            # step could not (tests/conftest.py sets the same for the suite).
            "HARNESS_SANDBOX": "off",
        }
        git(seed, "init", "-q", "-b", "main")
        ids = goal_ids(goals, two_iterations_every)
        files = {
            ".gitignore": "__pycache__/\n/.harness/worktrees/\n",
            ".harness/owners": f"{OWNER} {public_key}\n",
            **{f"goals/{goal_id}.yaml": goal_text(goal_id) for goal_id in ids},
        }
        for name, text in files.items():
            (seed / name).parent.mkdir(parents=True, exist_ok=True)
            (seed / name).write_text(text)
        for goal_id in ids:
            code = approve(seed, goal_id, private_key, env, io.StringIO())
            assert code == 0, goal_id
        git(seed, "add", "-A")
        git(seed, "commit", "-q", "-m", f"{goals} approved goals")
        subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
        paths = [base / f"clone{n}" for n in range(1, clones + 1)]
        for path in paths:
            subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
        return cls(base, bare, paths, counters, env, ids)

    def counted(self, step: str) -> Counter[tuple[str, int]]:
        """How often each (goal, iteration) of `step` really ran, from the counter file."""
        path = self.counters / f"{step}.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return Counter((g, int(i)) for g, i in (line.split() for line in lines))

    def remote_completed(self) -> set[str]:
        """The goals whose cell on the remote's branch says completed."""
        done = set()
        for goal_id in self.ids:
            proc = subprocess.run(
                [
                    "git",
                    "--git-dir",
                    str(self.bare),
                    "show",
                    f"harness/{goal_id}:ledger/{goal_id}/state.json",
                ],
                capture_output=True,
                text=True,
            )
            if proc.returncode == 0 and json.loads(proc.stdout)["status"] == "completed":
                done.add(goal_id)
        return done

    def auditor(self, name: str = "auditor") -> Path:
        """A fresh clone holding every goal branch of the remote as a local branch."""
        path = self.base / name
        subprocess.run(["git", "clone", "-q", str(self.bare), str(path)], check=True)
        git(path, "fetch", "-q", "origin", "refs/heads/harness/*:refs/heads/harness/*")
        return path

    def events(self, clone: Path, goal_id: str) -> list[dict[str, Any]]:
        """The goal's record as `harness replay --format json` reads it (chain and MACs
        checked), in `clone`."""
        out = io.BytesIO()
        code = replay(clone, goal_id, "json", None, self.env, out, io.StringIO())
        assert code == 0, goal_id
        events: list[dict[str, Any]] = json.loads(out.getvalue())["events"]
        return events


@dataclass
class Pass:
    """One `harness run --push origin` of one runner."""

    runner: int
    code: int
    out: str
    err: str
    seconds: float


@dataclass
class Runs:
    seconds: float  # from starting the runners until the last one stopped
    passes: list[Pass] = field(default_factory=list)

    def failures(self) -> list[Pass]:
        """Passes that ended other than done (0) or busy (4), or said something unexpected."""
        return [p for p in self.passes if p.code not in (0, 4) or "Traceback" in p.err]


def run_runners(team: Team, per_clone: int, max_passes: int = 40) -> Runs:
    """`per_clone` runners in each clone, all started at once. Each runs `harness run --push
    origin` again and again until a pass exits 0 having printed nothing: no goal moved (a
    goal another runner holds makes a pass busy, exit 4, and the runner goes round again)."""
    guard = threading.Lock()
    runs = Runs(0.0)
    start = threading.Barrier(len(team.clones) * per_clone)

    def runner(number: int, clone: Path) -> None:
        start.wait()
        for _ in range(max_passes):
            began = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "harness", "run", "--push", "origin"],
                cwd=clone,
                env=team.env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            done = Pass(
                number, proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - began
            )
            with guard:
                runs.passes.append(done)
            if done.code not in (0, 4) or (done.code == 0 and not done.out):
                return

    threads = [
        threading.Thread(target=runner, args=(n, clone))
        for n, clone in enumerate(
            (clone for clone in team.clones for _ in range(per_clone)), start=1
        )
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs.seconds = time.perf_counter() - began
    return runs


def step_runs(events: list[dict[str, Any]]) -> dict[str, Counter[tuple[str, int]]]:
    """How many step.started, step.finished and step.cutoff events each (step, iteration)
    has in one goal's record."""
    counts: dict[str, Counter[tuple[str, int]]] = {
        kind: Counter() for kind in ("step.started", "step.finished", "step.cutoff")
    }
    for event in events:
        if event["type"] in counts:
            counts[event["type"]][(event["step"], event["iteration"])] += 1
    return counts
