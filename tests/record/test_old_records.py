"""Records outlive versions: a goal parked by an earlier release loads, verifies and resumes.

`tests/data/records/parked-at-ship.bundle` was recorded by the release that made it (see
make_parked.py there) and is never regenerated; so were `recurring-run-2.bundle` and
`signed-parked.bundle` (a runner's signed checkpoints, make_signed.py). Whatever the cell, ledger or decision formats
become, this goal must verify as it is, take its signed ship decision and complete.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from harness.commands.demo import DEMO_SECRET, GOAL_ID
from harness.record.ledger import Ledger
from harness.record.render import replay_chunks
from harness.record.report.page import render_html
from harness.trust.secret import Secret
from tests.managed import SECRET, git, harness_in

RECORDS = Path(__file__).parents[1] / "data" / "records"


def _unbundled(tmp_path: Path, bundle: str = "parked-at-ship.bundle") -> Path:
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    git(
        root,
        "fetch",
        "-q",
        "--update-head-ok",
        str(RECORDS / bundle),
        "refs/heads/*:refs/heads/*",
    )
    git(root, "checkout", "-q", "main")
    return root


def test_a_goal_parked_by_an_earlier_release_verifies_ships_and_completes(tmp_path: Path) -> None:
    root = _unbundled(tmp_path)
    counters = tmp_path / "counters"
    counters.mkdir()
    key = tmp_path / "owner"
    shutil.copyfile(RECORDS / "owner-test-only", key)
    key.chmod(0o600)
    env = {**os.environ, "HARNESS_SECRET": SECRET, "TEST_COUNTER_DIR": str(counters)}

    checked = harness_in(root, env, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    row = json.loads(harness_in(root, env, "status", "--json").stdout)[0]
    assert (row["status"], row["gate"], row["verified"]) == ("parked_at_eyes", "ship", True)

    signed = harness_in(root, env, "ship", "g1", "--key", str(key))
    assert signed.returncode == 0, signed.stdout + signed.stderr
    git(root, "add", "goals/g1.approval")
    git(root, "commit", "-qm", "record the ship decision")
    gate_commit = row["gate_detail"].split()[1]
    for _ in range(2):  # the decision is taken once: a second run ships nothing
        ran = harness_in(root, env, "run")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert (counters / "ship.log").read_text() == gate_commit + "\n"  # the signed commit
    row = json.loads(harness_in(root, env, "status", "--json").stdout)[0]
    assert (row["status"], row["verified"]) == ("completed", True)
    checked = harness_in(root, env, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_goal_a_listed_runner_parked_verifies_without_the_secret_and_ships(
    tmp_path: Path,
) -> None:
    """`signed-parked.bundle`: every checkpoint signed by runner-1 (make_signed.py). A clone
    without the secret verifies it by that signature; the runner ships it and signs on."""
    root = _unbundled(tmp_path, "signed-parked.bundle")
    reviewer = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_SECRET")}
    reviewer["XDG_CONFIG_HOME"] = str(tmp_path / "reviewer-config")
    public = (RECORDS / "runner-test-only.pub").read_text().split()[1]
    said = "verified by runner runner-1 (SHA256:"
    checked = harness_in(root, reviewer, "verify")
    assert checked.returncode == 0 and said in checked.stdout, checked.stdout + checked.stderr
    assert said in harness_in(root, reviewer, "status").stdout
    assert public in (root / ".harness" / "runners").read_text()

    counters, key, runner_key = tmp_path / "counters", tmp_path / "owner", tmp_path / "runner"
    counters.mkdir()
    for source, target in (("owner-test-only", key), ("runner-test-only", runner_key)):
        shutil.copyfile(RECORDS / source, target)
        target.chmod(0o600)
    env = {**os.environ, "HARNESS_SECRET": SECRET, "TEST_COUNTER_DIR": str(counters)}
    env["HARNESS_RUNNER_KEY_FILE"] = str(runner_key)
    signed = harness_in(root, env, "ship", "g1", "--key", str(key))
    assert signed.returncode == 0, signed.stdout + signed.stderr
    git(root, "add", "goals")
    git(root, "commit", "-qm", "record the ship decision")
    ran = harness_in(root, env, "run")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(harness_in(root, env, "status", "--json").stdout)[0]["status"] == "completed"
    checked = harness_in(root, reviewer, "verify")
    assert checked.returncode == 0 and said in checked.stdout, checked.stdout + checked.stderr


def test_the_earlier_release_s_record_is_refused_when_a_byte_of_it_changes(tmp_path: Path) -> None:
    """The control: the same bundle with one ledger byte changed does not verify."""
    root = _unbundled(tmp_path)
    env = {**os.environ, "HARNESS_SECRET": SECRET}
    first = "ledger/g1/events/000001.jsonl"
    text = git(root, "show", f"harness/g1:{first}") + "\n"
    edited = text.replace('"iter":0', '"iter":1', 1)
    assert edited != text
    git(root, "checkout", "-q", "harness/g1")
    (root / first).write_text(edited)
    git(root, "commit", "-qam", "an edit")
    git(root, "checkout", "-q", "main")
    checked = harness_in(root, env, "verify")
    assert checked.returncode == 3, checked.stdout + checked.stderr


def test_a_recurring_goal_recorded_before_anchoring_runs_on_from_its_due_time(
    tmp_path: Path,
) -> None:
    """`recurring-run-2.bundle` (every: 2s) was recorded when a run was due at the last
    start plus `every`: its cell has no `run_due_at`, its `run.started` a `due_at` of run 1's
    start plus 2 s. It verifies, shows its next run, runs it on the schedule anchored at
    that `due_at` (not at run 2's later start) exactly once, and verifies again."""
    root = _unbundled(tmp_path, "recurring-run-2.bundle")
    counters = tmp_path / "counters"
    counters.mkdir()
    later = "2026-12-03T14:40:00.100Z"  # a minute after the bundle's runs
    env = {**os.environ, "HARNESS_SECRET": SECRET, "TEST_COUNTER_DIR": str(counters)}
    env |= {"HARNESS_NOW": later}
    checked = harness_in(root, env, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    row = json.loads(harness_in(root, env, "status", "--json").stdout)[0]
    assert (row["status"], row["run"], row["runnable"], row["verified"]) == (
        "completed",
        2,
        True,
        True,
    )
    for _ in range(2):  # one catch-up run, not one per missed interval
        ran = harness_in(root, env, "run")
        assert ran.returncode == 0, ran.stdout + ran.stderr
    row = json.loads(harness_in(root, env, "status", "--json").stdout)[0]
    assert (row["status"], row["run"]) == ("completed", 3)
    text = git(root, "show", "harness/g1:ledger/g1/events/000001.jsonl")
    started = [
        e for e in (json.loads(x)["e"] for x in text.splitlines()) if e["type"] == "run.started"
    ]
    old_due = _moment(started[0]["data"]["due_at"])
    stands_for = _moment(started[1]["data"]["due_at"])
    assert old_due < _moment(started[0]["ts"])  # the bundle's run 2 started after it was due
    periods = (stands_for - old_due) / timedelta(seconds=2)
    assert periods == int(periods) and periods > 1, (old_due, stands_for)
    assert _moment(row["next_run_due"]) - stands_for == timedelta(seconds=2)
    checked = harness_in(root, env, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _moment(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_a_record_older_than_the_sandbox_field_reads_as_unknown() -> None:
    """ledger/fix-calc-add was written before `step.started` carried `sandbox`: both
    reports say so, not a guess (issue 27)."""
    before = Path(__file__).resolve().parents[2] / "ledger" / GOAL_ID / "events"
    key = Secret(DEMO_SECRET.encode()).goal_key(GOAL_ID)
    old = "unknown (record older than the field), network shared"
    report = b"".join(replay_chunks(Ledger(before, GOAL_ID, key).records(), GOAL_ID, "md"))
    assert f"| containment | build ×2, judge ×2: {old} |\n".encode() in report
    page = render_html(Ledger(before, GOAL_ID, key).records(), GOAL_ID, "verified").decode()
    assert page.count(old) == 4 + 1  # each step's row and the header
