"""An API outage end to end through `python -m harness`: a real script agent printing Claude
Code's real failure output (tests/outage.py), real git, the real clock."""

from __future__ import annotations

import re
import time
from datetime import datetime

from tests.managed import ManagedFactory, ManagedRepo, git
from tests.outage import MESSAGE_429, MESSAGE_529, outage_files, outage_goal, plan_outcomes

TS = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z"


def _shape(text: str) -> str:
    """Printed lines with timestamps as `T` and measured durations as `S`."""
    return re.sub(r" [0-9]+\.[0-9]s ", " Ss ", re.sub(TS, "T", text))


def _sleep_until(ts: str) -> None:
    due = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, due - time.time()) + 0.2)


def _first_try(repo: ManagedRepo) -> tuple[str, str, str]:
    """The first build meets a 529: its stdout, when the next try is due, the waiting text."""
    first = repo.harness("run", check=0)
    assert _shape(first.stdout) == (
        "T g1 #1 started sha256=" + first.stdout.split("sha256=")[1][:12] + " approved-by="
        "owner@example.com limits: iterations=3 seconds=7200 cost_usd=20.0 turns=300 passes=50\n"
        "T g1 #2 build[1] started\n"
        "T g1 #3 build[1] unavailable exit=1 Ss cost=$0.0000 turns=1 changed=1 "
        f"(try 1 of 2, next after T): {MESSAGE_529}\n"
    )
    row = repo.status()
    retry_at = row["unavailable"]["retry_at"]
    assert row["unavailable"] == {
        "count": 1,
        "tries": 2,
        "message": MESSAGE_529,
        "retry_at": retry_at,
    }
    waiting = f"model API unavailable (try 1 of 2, next after {retry_at}): {MESSAGE_529}"
    assert first.stderr == f"harness: g1: waiting: {waiting}\n"
    assert (row["step"], row["iteration"], row["gate"]) == ("build", 1, None)
    assert (row["budget_used"]["iterations"], row["budget_used"]["passes"]) == (0, 1)
    status = repo.harness("status", "g1", check=0).stdout
    assert status.startswith("g1 paused step=build iteration=1 failing=- budget: iterations=0/3 ")
    assert status.endswith(f" gate=- {waiting}\n")
    assert repo.count("build") == ["1"] and repo.count("judge") == []
    return first.stdout, retry_at, waiting


def _stopped(repo: ManagedRepo, detail: str) -> None:
    """After the last try: what status, the report and the HTML page say."""
    row = repo.status()
    assert (row["status"], row["gate"], row["step"], row["iteration"]) == (
        "needs_attention",
        "agent_unavailable",
        "build",
        1,
    )
    assert row["unavailable"] == {"count": 2, "tries": 2, "message": MESSAGE_429, "retry_at": None}
    assert (row["budget_used"]["iterations"], row["budget_used"]["passes"]) == (0, 2)
    assert repo.harness("status", "--check", check=11).stdout.endswith(
        f" gate=agent_unavailable model API unavailable (try 2 of 2): {MESSAGE_429}\n"
    )
    assert repo.count("build") == ["1", "1"] and repo.count("judge") == []
    report = (repo.ledger_dir / "report.md").read_text()
    assert f"| gate detail | {detail} |\n" in report
    assert f"| agent | model API unavailable (try 2 of 2): {MESSAGE_429} |\n" in report
    html = repo.harness("replay", "g1", "--format", "html", check=0).stdout
    assert "agent unavailable" in html and "model API unavailable (try 2 of 2" in html


def test_g3_an_outage_spends_no_iteration_backs_off_and_stops_at_agent_unavailable(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=outage_goal(tries=2, backoff="5s"), files=outage_files())
    plan_outcomes(repo, "529", "429")
    first, retry_at, waiting = _first_try(repo)

    # Before the next try is due, a run leaves the goal alone and appends nothing.
    head = git(repo.worktree, "rev-parse", "HEAD")
    early = repo.harness("run", check=0)
    assert (early.stdout, early.stderr) == ("", f"harness: g1: waiting: {waiting}\n")
    assert git(repo.worktree, "rev-parse", "HEAD") == head
    assert repo.count("build") == ["1"]

    # The second (last) try; the process dies right after recording it, before its gate.
    _sleep_until(retry_at)
    killed = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "after_append@3"})
    assert killed.returncode == -9
    assert _shape(killed.stdout) == "T g1 #4 resumed\nT g1 #5 build[1] started\n"
    last = repo.harness("run", check=0)
    detail = f"the model API failed on 2 tries in a row: {MESSAGE_429}"
    assert _shape(last.stdout) == (
        f"T g1 #7 resumed\nT g1 #8 needs_attention gate=agent_unavailable ({detail})\n"
    )
    _stopped(repo, detail)
    replay = repo.harness("replay", "g1", check=0).stdout
    assert replay.startswith(first + killed.stdout) and replay.endswith(last.stdout)
    assert _shape(replay.splitlines()[5]) == (
        f"T g1 #6 build[1] unavailable exit=1 Ss cost=$0.0000 turns=1 changed=1 "
        f"(try 2 of 2): {MESSAGE_429}"
    )

    # G3: it stays stopped until a human acts; an unpark retries at once, and the build
    # that reaches the model goes on to the judge in the same round.
    assert repo.harness("run", check=0).stdout == ""
    decided = repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    assert "signed `unpark agent_unavailable`" in decided.stdout
    row = repo.status()
    assert (row["status"], row["gate"], row["iteration"], row["unavailable"]) == (
        "completed",
        None,
        1,
        None,
    )
    assert (row["budget_used"]["iterations"], row["budget_used"]["turns"]) == (1, 1 + 1 + 4)
    assert row["budget_used"]["cost_usd"] == 0.0406
    assert repo.count("build") == ["1", "1", "1"] and repo.count("judge") == ["1"]
    assert git(repo.worktree, "show", "HEAD:partial.txt") == "529\n429"
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
