"""The crash matrix: killed at every failpoint, then resumed, a goal ends exactly as an
uninterrupted run does, verifies, and never runs a finished step again."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

# Each row kills a run and resumes it: the same load, roll-forward and step paths the rest
# of the suite drives, hundreds of times over (tests/conftest.py).
UNMEASURED_SUBPROCESSES = "the kill-and-resume rows repeat the paths other tests cover"

FAILPOINTS = [
    "after_append",
    "after_cell_write",
    "before_commit",
    "after_commit",
    "in_plan",
    "in_build",
    "in_judge",
    "in_review",
]
GOAL = base_goal() | {
    "plan": {"run": ["sh", "-c", "echo plan: write right"]},
    "review": {"run": ["sh", "-c", "grep -q right value.txt"]},
}

# What a finished goal looks like: status, gate, iteration, each step.finished as
# (step, iteration, result), the worktree's files, and every event.
Outcome = tuple[
    str, str | None, int, list[tuple[str, int, str | None]], dict[str, bytes], list[dict[str, Any]]
]


def outcome(repo: ManagedRepo) -> Outcome:
    events = repo.replayed()["events"]
    finished = [
        (e["step"], e["iteration"], e["data"].get("result"))
        for e in events
        if e["type"] == "step.finished"
    ]
    row = repo.status()
    tree = {
        p.name: p.read_bytes() for p in repo.worktree.iterdir() if p.is_file() and p.name != ".git"
    }
    return row["status"], row["gate"], row["iteration"], finished, tree, events


def assert_no_finished_step_ran_again(events: list[dict[str, Any]]) -> None:
    finished_at: dict[str, int] = {}
    for e in events:
        cid = e["data"].get("call_id")
        if e["type"] == "step.finished":
            assert cid not in finished_at, f"{cid} finished twice"
            finished_at[cid] = e["seq"]
        if e["type"] == "step.started":
            assert cid not in finished_at, f"{cid} started again after it finished"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    from tests.managed import ManagedRepo, make_key

    base = tmp_path_factory.mktemp("baseline")
    repo = ManagedRepo.create(base / "repo", make_key(base, "k"), goal=GOAL)
    repo.harness("run", check=0)
    return outcome(repo)


@pytest.mark.parametrize("nth", [1, 2, 4])
@pytest.mark.parametrize("point", FAILPOINTS)
def test_killed_at_failpoint_then_resumed(
    managed: ManagedFactory, baseline: Outcome, point: str, nth: int
) -> None:
    repo = managed(goal=GOAL)
    first = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": f"{point}@{nth}"})
    assert first.returncode in (0, -9), first.stderr
    for _ in range(5):
        if repo.status()["status"] not in ("pending", "running", "paused"):
            break
        repo.verified()
        repo.harness("run", check=0)
    status, gate, iteration, finished, tree, events = outcome(repo)
    # On a mismatch, each step's recorded result (exit code and output) says why.
    results = [e["data"] for e in events if e["type"] == "step.finished"]
    assert (status, gate, iteration, finished, tree) == baseline[:5], results
    assert_no_finished_step_ran_again(events)
    repo.verified()


# ---- the last event of every path -----------------------------------------------------
#
# Each path is a prelude (commands run uninterrupted) and a final command, killed at a
# failpoint hit counted from the end of that command's hits (-1: its last) or from the
# start. A run traced with HARNESS_FAILPOINT_TRACE says how many hits each command makes.

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"; touch SHIPPED']}
SHIP_FAILS = {"run": ["sh", "-c", 'echo tried >> "$TEST_COUNTER_DIR/ship.log"; exit 1']}
DROP = (
    "from pathlib import Path\n"
    "Path('migrations').mkdir(exist_ok=True)\n"
    "Path('migrations/0002_drop_users.sql').write_text('DROP TABLE users;\\n')\n"
    "Path('value.txt').write_text('right\\n')\n"
)
SIGN = ("--key", "{key}")


@dataclass(frozen=True)
class Path_:
    goal: dict[str, Any]
    final: tuple[str, ...]
    prelude: tuple[tuple[str, ...], ...] = ()
    mode: str = "fix-on-2"
    files: dict[str, str] | None = None


PATHS: dict[str, Path_] = {
    "completed": Path_(base_goal(), ("run",)),
    "parked-ship": Path_(base_goal() | {"ship": SHIP}, ("run",)),
    "shipped": Path_(base_goal() | {"ship": SHIP}, ("ship", "g1", *SIGN), (("run",),)),
    "ship-failed": Path_(base_goal() | {"ship": SHIP_FAILS}, ("ship", "g1", *SIGN), (("run",),)),
    "destructive": Path_(
        base_goal() | {"build": {"run": [sys.executable, "drop_agent.py"]}},
        ("run",),
        files={"drop_agent.py": DROP},
    ),
    "unparked": Path_(
        base_goal() | {"build": {"run": [sys.executable, "drop_agent.py"]}},
        ("unpark", "g1", *SIGN),
        (("run",),),
        files={"drop_agent.py": DROP},
    ),
    "no-progress": Path_(base_goal(), ("run",), mode="nothing"),
    "budget": Path_(base_goal() | {"budget": {"max_iterations": 2}}, ("run",), mode="never"),
    "max-passes": Path_(
        base_goal() | {"halt": {"no_progress_passes": 5, "max_passes": 3}}, ("run",), mode="never"
    ),
    "tamper": Path_(base_goal(), ("run",), mode="tamper-goal"),
    "read-only": Path_(
        base_goal() | {"judge": {"run": ["sh", "-c", "echo x > judge-wrote.txt; exit 1"]}},
        ("run",),
    ),
    "cancelled": Path_(base_goal(), ("cancel", "g1"), (("run", "--max-steps", "1"),)),
}
# (failpoint, hit): negative hits count from the end of the final command's hits.
LAST_HITS = [
    ("after_append", -1),
    ("after_append", -2),
    ("after_cell_write", -1),
    ("before_commit", -1),
    ("after_commit", -1),
]
# A decision's own event is the first the command appends.
FIRST_HITS = {"shipped": [("after_append", 1)], "unparked": [("after_append", 1)]}


def _argv(repo: ManagedRepo, args: tuple[str, ...]) -> list[str]:
    return [a.replace("{key}", str(repo.key.private)) for a in args]


def _make(factory: Callable[..., ManagedRepo], path: Path_) -> ManagedRepo:
    repo = factory(goal=path.goal, mode=path.mode, files=path.files)
    for args in path.prelude:
        repo.harness(*_argv(repo, args), check=0)
    return repo


def _settled(repo: ManagedRepo) -> Outcome:
    """Run until the goal rests (committing a decision `ship`/`unpark` wrote first)."""
    if git(repo.root, "status", "--porcelain", "goals"):
        git(repo.root, "add", "goals")
        git(repo.root, "commit", "-qm", "record the decision")
    for _ in range(5):
        repo.harness("run", check=0)
        if repo.status()["status"] not in ("pending", "running", "paused"):
            break
    return outcome(repo)


Settled = tuple[str, str | None, int, list[tuple[str, int, str | None]], dict[str, bytes]]


def _baseline(tmp: Path, name: str) -> tuple[Settled, Counter[str]]:
    """Path `name` run uninterrupted: its settled outcome and its final command's hits."""
    from tests.managed import make_key

    path = PATHS[name]
    base = tmp / f"last-{name}"
    base.mkdir()
    repo = _make(functools.partial(ManagedRepo.create, base / "repo", make_key(base, "k")), path)
    trace = base / "trace"
    repo.harness(*_argv(repo, path.final), env=repo.env | {"HARNESS_FAILPOINT_TRACE": str(trace)})
    settled = _settled(repo)[:5]
    return settled, Counter(trace.read_text().split())


@pytest.fixture(scope="session")
def last_baseline(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[Settled, Counter[str]]]:
    """Each path's uninterrupted run, made once per test session: the xdist workers share
    one folder (the parent of their base temp folders) and take turns under a lock, so a
    path's baseline is run by whichever worker needs it first and read by the others."""
    base = tmp_path_factory.getbasetemp()
    # Without xdist the parent is shared by every session of this user: stay in our own.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "crash-baselines"
    shared.mkdir(exist_ok=True)

    def get(name: str) -> tuple[Settled, Counter[str]]:
        saved = shared / f"{name}.json"
        with (shared / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not saved.exists():
                (status, gate, iteration, finished, tree), hits = _baseline(
                    Path(tempfile.mkdtemp(dir=shared)), name
                )
                record = [status, gate, iteration, finished, {k: v.hex() for k, v in tree.items()}]
                saved.write_text(json.dumps({"outcome": record, "hits": dict(hits)}))
        raw = json.loads(saved.read_text())
        status, gate, iteration, finished, tree = raw["outcome"]
        steps = [(step, it, result) for step, it, result in finished]
        files = {k: bytes.fromhex(v) for k, v in tree.items()}
        return (status, gate, iteration, steps, files), Counter(raw["hits"])

    return get


def _cases() -> list[tuple[str, str, int]]:
    return [
        (name, point, hit) for name in PATHS for point, hit in LAST_HITS + FIRST_HITS.get(name, [])
    ]


@pytest.mark.parametrize(("name", "point", "hit"), _cases())
def test_killed_at_the_last_events_of_a_path_then_resumed(
    managed: ManagedFactory,
    last_baseline: Callable[[str], tuple[Settled, Counter[str]]],
    name: str,
    point: str,
    hit: int,
) -> None:
    path = PATHS[name]
    want, hits = last_baseline(name)
    nth = hit if hit > 0 else hits[point] + 1 + hit
    if nth < 1:
        pytest.skip(f"{name}: {path.final[0]} hits {point} only {hits[point]} time(s)")
    repo = _make(managed, path)
    killed = repo.harness(
        *_argv(repo, path.final), env=repo.env | {"HARNESS_FAILPOINT": f"{point}@{nth}"}
    )
    assert killed.returncode == -9, (killed.stdout, killed.stderr)
    repo.verified()
    status, gate, iteration, finished, tree, events = _settled(repo)
    # On a mismatch, every event of the record (each step's result, each gate) says why.
    assert (status, gate, iteration, finished, tree) == want, [
        (e["type"], e.get("step"), e.get("iteration"), e["data"]) for e in events
    ]
    assert status not in ("pending", "running", "paused")
    assert_no_finished_step_ran_again(events)
    # Finished for real: the cell and the report committed, the worktree clean.
    assert git(repo.worktree, "status", "--porcelain") == ""
    repo.harness("verify", check=0)  # and as a user runs it
