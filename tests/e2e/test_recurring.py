"""Issue 17, recurring goals (`every:`): runs, run numbers, per-run and lifetime budgets.

Real git, real `harness` processes, the scripted agent and judge (tests/managed.py), and the
wall clock with a short interval: each test waits for a run to come due.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git


def recurring_goal(**extra: Any) -> dict[str, Any]:
    return base_goal() | {"every": "2s"} | extra


def events(repo: ManagedRepo) -> list[dict[str, Any]]:
    rows = []
    for segment in sorted((repo.ledger_dir / "events").glob("*.jsonl")):
        rows += [json.loads(line)["e"] for line in segment.read_text().splitlines()]
    return rows


def wait_until_due(repo: ManagedRepo) -> None:
    """Sleep until the next run is due by the status the harness shows."""
    due = repo.status()["next_run_due"]
    moment = datetime.fromisoformat(due.replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, moment - time.time()) + 0.05)


def commit_on_main(repo: ManagedRepo, name: str, text: str) -> str:
    (repo.root / name).write_text(text)
    git(repo.root, "add", name)
    git(repo.root, "commit", "-q", "-m", f"add {name}")
    return git(repo.root, "rev-parse", "HEAD")


def test_three_runs_over_three_intervals_with_one_approval(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(), mode="fix-on-1")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["run"]) == ("completed", 1)
    first_due = row["next_run_due"]
    news = commit_on_main(repo, "news.txt", "today's code\n")
    # Not due yet (unless this machine is slow): the goal is left alone, nothing appended.
    seq = len(events(repo))
    idle = repo.harness("run", check=0)
    if repo.status()["run"] == 1:
        assert len(events(repo)) == seq
        assert f"g1 completed (run 1; the next is due {first_due})" in idle.stderr
        wait_until_due(repo)
        repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["run"]) == ("completed", 2)
    started = [e for e in events(repo) if e["type"] == "run.started"]
    assert [e["data"]["run"] for e in started] == [2]
    assert started[0]["data"]["control_commit"] == news
    assert started[0]["data"]["due_at"] == first_due
    # The run's first commit is today's control tree plus the record, on the goal branch.
    branch = f"harness/{repo.goal_id}"
    run_commit = git(repo.root, "log", "--format=%H", "--grep", "run 2 started", branch)
    assert git(repo.root, "rev-parse", f"{run_commit}:news.txt")
    assert git(repo.root, "rev-parse", f"{run_commit}:agent.py") == git(
        repo.root, "rev-parse", f"{news}:agent.py"
    )
    ls = git(repo.root, "ls-tree", "--name-only", run_commit)
    assert "value.txt" not in ls.split()  # run 1's work is not carried into run 2
    assert (repo.worktree / "news.txt").read_text() == "today's code\n"
    # Every event of run 2 carries the run number; run 1's carry none.
    for event in events(repo):
        assert event.get("run", 1) == (2 if event["seq"] >= started[0]["seq"] else 1)

    diff = repo.harness("diff", repo.goal_id, "--stat", check=0).stdout
    assert "value.txt" in diff and "news.txt" not in diff  # run 2's change, on its base
    wait_until_due(repo)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["run"]) == ("completed", 3)
    assert len(repo.count("build")) == 3
    repo.verified()

    replay = repo.harness("replay", repo.goal_id, "--run", "2", check=0).stdout
    assert "run 2 started" in replay and "run 3 started" not in replay
    assert replay.count("goal.started") == 0 and replay.count(" completed") == 1
    full = repo.harness("replay", repo.goal_id, check=0).stdout
    assert "run 2 started" in full and "run 3 started" in full


def test_verify_fails_when_an_event_of_run_2_is_altered(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(), mode="fix-on-1")
    repo.harness("run", check=0)
    wait_until_due(repo)
    repo.harness("run", check=0)
    assert repo.status()["run"] == 2
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    lines = segment.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"run":2' in line and "step.finished" in line)
    lines[index] = lines[index].replace('"exit_code":0', '"exit_code":1', 1)
    segment.write_text("".join(lines))
    proc = repo.harness("verify")
    assert proc.returncode == 3, proc
    assert "MAC does not match" in proc.stdout + proc.stderr


def test_an_edited_goal_file_stops_the_next_run_until_approved(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(), mode="fix-on-1")
    repo.harness("run", check=0)
    repo.commit_goal_change(recurring_goal(objective="Make value.txt say right, again.\n"))
    wait_until_due(repo)
    proc = repo.harness("run", check=0)
    assert "waiting for approval" in proc.stderr
    row = repo.status()
    assert (row["status"], row["run"], row["waiting_for_approval"]) == ("completed", 1, True)
    assert len(repo.count("build")) == 1
    repo.harness("approve", repo.goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "approve the edit")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["run"]) == ("completed", 2)
    types = [e["type"] for e in events(repo)]
    revised = types.index("goal.revised")
    assert types[revised + 1] == "run.started"
    repo.verified()


SHIP = {"run": ["sh", "-c", 'echo "$HARNESS_SHIP_BASE" >> "$TEST_COUNTER_DIR/ship.log"']}


def test_a_run_parked_at_eyes_blocks_the_next_until_shipped(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(ship=SHIP), mode="fix-on-1")
    repo.harness("run", check=0)
    assert (repo.status()["gate"], repo.status()["run"]) == ("ship", 1)
    wait_until_due(repo)
    repo.harness("run", check=0)  # due, but the run waits for a human: no new run
    row = repo.status()
    assert (row["status"], row["gate"], row["run"]) == ("parked_at_eyes", "ship", 1)
    assert not [e for e in events(repo) if e["type"] == "run.started"]

    first_base = git(repo.root, "rev-parse", "main")
    repo.harness("ship", repo.goal_id, "--key", str(repo.key.private), check=0)
    assert (repo.status()["status"], repo.count("ship")) == ("completed", [first_base])
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "record the ship decision")
    repo.harness("run", check=0)  # its time has come: run 2 starts and parks at ship
    row = repo.status()
    assert (row["status"], row["gate"], row["run"]) == ("parked_at_eyes", "ship", 2)
    assert len(repo.count("build")) == 2
    # Run 2 ships its own change, on the control commit it started from.
    second_base = git(repo.root, "rev-parse", "main")
    repo.harness("ship", repo.goal_id, "--key", str(repo.key.private), check=0)
    assert repo.count("ship") == [first_base, second_base]
    repo.verified()


def test_three_missed_intervals_give_one_catch_up_run(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(), mode="fix-on-1")
    repo.harness("run", check=0)
    first = repo.status()
    time.sleep(3 * 2 + 0.3)  # the runner was down for three intervals
    repo.harness("run", check=0)
    row = repo.status()
    started = [e for e in events(repo) if e["type"] == "run.started"]
    assert (row["run"], len(started), len(repo.count("build"))) == (2, 1, 2)
    # The schedule is anchored at the first run's start: the catch-up run stands for the
    # last anchored time it reached (three or more intervals on), and the next is due an
    # interval after that, the first anchored time after the catch-up run began.
    assert row["run_started_at"] == started[0]["ts"]
    anchor = _moment(first["run_started_at"])
    stands_for = _moment(started[0]["data"]["due_at"])
    periods = (stands_for - anchor) / timedelta(seconds=2)
    assert periods == int(periods) and periods >= 3, (anchor, stands_for)
    due = _moment(row["next_run_due"])
    assert due - stands_for == timedelta(seconds=2)
    assert due > _moment(started[0]["ts"])


def _moment(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


RUN_START_POINTS = [
    ("after_append", 1),  # run.started appended, nothing else written
    ("run_cell_written", 1),
    ("run_before_commit", 1),
    ("run_before_reset", 1),
    ("run_after_reset", 1),
]


def _killed_at_run_start(managed: ManagedFactory, point: str, nth: int) -> ManagedRepo:
    repo = managed(goal=recurring_goal(), mode="fix-on-1")
    repo.harness("run", check=0)
    commit_on_main(repo, "news.txt", "today's code\n")
    wait_until_due(repo)
    killed = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": f"{point}@{nth}"})
    assert killed.returncode == -9, killed
    assert [e["type"] for e in events(repo)][-1] == "run.started"
    return repo


def _finished_like_an_uninterrupted_run(repo: ManagedRepo) -> None:
    row = repo.status()
    assert (row["status"], row["run"]) == ("completed", 2)
    types = [e["type"] for e in events(repo)]
    assert types.count("run.started") == 1 and len(repo.count("build")) == 2
    branch = f"harness/{repo.goal_id}"
    starts = git(repo.root, "log", "--format=%H", "--grep", "run 2 started", branch).split()
    assert len(starts) == 1
    main = git(repo.root, "rev-parse", "main")
    shown = ["ls-tree", "-r", "--name-only"]
    assert set(git(repo.root, *shown, starts[0]).split()) - set(
        git(repo.root, *shown, main).split()
    ) == {p for p in git(repo.root, *shown, starts[0]).split() if p.startswith("ledger/g1/")}
    assert (repo.worktree / "news.txt").is_file()
    assert git(repo.worktree, "status", "--porcelain") == ""
    repo.verified()


@pytest.mark.parametrize(("point", "nth"), RUN_START_POINTS)
def test_killed_while_run_2_starts_then_resumed(
    managed: ManagedFactory, point: str, nth: int
) -> None:
    repo = _killed_at_run_start(managed, point, nth)
    assert repo.harness("verify").returncode == 0
    repo.harness("run", check=0)
    _finished_like_an_uninterrupted_run(repo)


def test_killed_mid_reset_resumes_and_lets_no_edited_byte_through(
    managed: ManagedFactory,
) -> None:
    repo = _killed_at_run_start(managed, "run_before_reset", 1)
    # What a reset cut half-way (or anyone meanwhile) leaves: the old run's files, one new
    # file missing, an edited script, and git's lock of the index.
    (repo.worktree / "agent.py").write_text("raise SystemExit('not the committed agent')\n")
    (repo.worktree / ".git").read_text()  # a linked worktree: its index sits in the admin dir
    admin = Path(git(repo.worktree, "rev-parse", "--absolute-git-dir"))
    (admin / "index.lock").write_text("")
    repo.harness("run", check=0)
    _finished_like_an_uninterrupted_run(repo)


def test_a_foreign_branch_head_while_run_2_starts_is_tamper(managed: ManagedFactory) -> None:
    repo = _killed_at_run_start(managed, "run_before_commit", 1)
    # Someone commits on the goal branch before the run's commit is made.
    (repo.worktree / "value.txt").write_text("forged\n")
    git(repo.worktree, "add", "value.txt")
    git(repo.worktree, "commit", "-q", "-m", "not the harness")
    repo.harness("run")
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper")
    assert len(repo.count("build")) == 1


def test_a_spent_run_ends_and_the_next_gets_a_fresh_allowance(managed: ManagedFactory) -> None:
    # Each build reports $0.25; the judge never passes: two builds spend the run's $0.50.
    goal = recurring_goal(budget={"max_iterations": 5, "max_cost_usd": 0.5})
    repo = managed(goal=goal | {"lifetime": {"max_cost_usd": 0.75}}, mode="never")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["run"]) == ("failed", None, 1)
    assert row["budget_used"]["cost_usd"] == 0.5 and len(repo.count("build")) == 2
    failed = [e for e in events(repo) if e["type"] == "goal.failed"]
    assert failed[0]["data"] == {"detail": "cost_usd 0.5/0.5", "reason": "budget_exhausted"}
    wait_until_due(repo)
    repo.harness("run", check=0)
    row = repo.status()
    # Run 2 started with a fresh $0.50; after one build the lifetime's $0.75 is reached.
    assert (row["run"], row["budget_used"]["cost_usd"]) == (2, 0.25)
    assert (row["status"], row["gate"]) == ("needs_attention", "lifetime_exhausted")
    assert row["gate_detail"] == "cost_usd 0.75/0.75 over 2 runs"
    assert row["lifetime_used"]["cost_usd"] == 0.75 and row["lifetime_limit"]["cost_usd"] == 0.75
    assert "lifetime: cost_usd=0.75/0.75" in repo.harness("status", check=0).stdout
    wait_until_due(repo)
    repo.harness("run", check=0)  # stopped for good: no run, no build
    assert (repo.status()["gate"], len(repo.count("build"))) == ("lifetime_exhausted", 3)


def test_max_runs_stops_the_goal_until_a_revision_raises_it(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(lifetime={"max_runs": 2}), mode="fix-on-1")
    repo.harness("run", check=0)
    wait_until_due(repo)
    repo.harness("run", check=0)
    wait_until_due(repo)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["run"]) == ("needs_attention", "lifetime_exhausted", 2)
    assert row["gate_detail"] == "runs 2/2 over 2 runs"
    unpark = repo.harness("unpark", repo.goal_id, "--key", str(repo.key.private))
    assert unpark.returncode != 0  # only a revised, approved goal crosses it
    repo.commit_goal_change(recurring_goal(lifetime={"max_runs": 3}))
    repo.harness("approve", repo.goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "approve three runs")
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["run"], len(repo.count("build"))) == ("completed", 3, 3)
    repo.verified()


def test_lifetime_without_every_is_invalid_input(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"lifetime": {"max_runs": 2}}, approve=False)
    proc = repo.harness("check")
    assert proc.returncode == 2, proc
    text = proc.stdout + proc.stderr
    assert "goals/g1.yaml" in text and "lifetime" in text and "every" in text
    assert "Traceback" not in text


def test_reports_list_the_runs_and_a_recurring_goal_goes_stale(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(every="1s"), mode="fix-on-1")
    repo.harness("run", check=0)
    wait_until_due(repo)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["stale_after_s"], row["stale"]) == (2, False)
    report = (repo.ledger_dir / "report.md").read_text()
    assert "## Runs" in report
    assert "| 1 |" in report and "| 2 |" in report and "| completed | $0.25 |" in report
    page = repo.harness("replay", repo.goal_id, "--format", "html", check=0).stdout
    assert '<section id="runs">' in page and page.count('<tr class="run">') == 2
    time.sleep(2.3)  # two intervals and no run came: its runner has stopped
    row = repo.status()
    assert (row["status"], row["stale"]) == ("completed", True)
    assert repo.harness("status", "--check").returncode == 12
    bad = repo.harness("replay", repo.goal_id, "--run", "3")
    assert bad.returncode == 2 and "1 to 2" in bad.stderr


def test_cancel_ends_the_run_and_the_next_comes_at_its_time(managed: ManagedFactory) -> None:
    repo = managed(goal=recurring_goal(ship=SHIP), mode="fix-on-1")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    repo.harness("cancel", repo.goal_id, check=0)
    assert (repo.status()["status"], repo.status()["run"]) == ("cancelled", 1)
    wait_until_due(repo)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["run"]) == ("parked_at_eyes", "ship", 2)
    assert repo.count("ship") == []  # the cancelled run never shipped


def test_runs_push_fast_forward_and_verify_in_another_clone(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    import subprocess

    seed = managed(goal=recurring_goal(), mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)

    def clone(path: Path) -> ManagedRepo:
        subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
        return ManagedRepo(path, seed.key, seed.counters, seed.goal_id, dict(seed.env))

    runner = clone(tmp_path / "runner")
    runner.harness("run", "--push", "origin", check=0)
    first = git(runner.root, "rev-parse", "origin/harness/g1")
    news = commit_on_main(seed, "news.txt", "pushed to main\n")
    git(seed.root, "push", "-q", str(bare), "main")
    wait_until_due(runner)
    runner.harness("run", "--push", "origin", check=0)
    row = runner.status()
    assert (row["status"], row["run"]) == ("completed", 2)
    head = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", "harness/g1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert head == git(runner.root, "rev-parse", "harness/g1")
    assert git(runner.root, "merge-base", "--is-ancestor", first, head) == ""
    started = [e for e in events(runner) if e["type"] == "run.started"]
    assert started[0]["data"]["control_commit"] == news
    auditor = clone(tmp_path / "auditor")
    git(auditor.root, "fetch", "-q", "origin", "harness/g1:harness/g1")
    out = auditor.harness("verify", "g1", check=0).stdout
    assert "status completed" in out
