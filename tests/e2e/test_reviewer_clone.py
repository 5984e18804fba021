"""A reviewer clone (issue 30 item 4): a clone of a runner's repository without the secret.

Everything read-only works there and says it is unverified; `verify` still checks what
needs no secret (the chain, the cell's place in it, the approval); nothing advises making a
secret there, `secret new` refuses, and `run` refuses with what to do, writing nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git, harness_in, reviewer_clone

SHIP = {"run": ["sh", "-c", "echo shipped"]}


def _reviewer(runner: ManagedRepo, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The runner parks its goal, then a reviewer clone of it (tests/managed.py)."""
    runner.harness("run", check=0)
    assert runner.status()["status"] == "parked_at_eyes"
    return reviewer_clone(runner, tmp_path)


def test_every_read_only_command_works_unverified(managed: ManagedFactory, tmp_path: Path) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    clone, env = _reviewer(runner, tmp_path)
    said = []
    for args in (
        ("status",),
        ("status", "--json"),
        ("replay", "g1"),
        ("report", "--all", "--out", str(tmp_path / "site")),
        ("report", "g1", "--out", str(tmp_path / "site1")),
        ("diff", "g1"),
        ("verify",),
        ("verify", "g1", "--json"),
        ("doctor",),
    ):
        proc = harness_in(clone, env, *args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        said.append(proc.stdout + proc.stderr)
        assert "secret new" not in proc.stdout + proc.stderr, args
    status, as_json, replay, report, _, diff, verify, verify_json, doctor = said
    assert "parked_at_eyes" in status and "(unverified: no secret here" in status
    assert json.loads(as_json)[0]["verified"] is False
    assert "parked_at_eyes gate=ship" in replay and "unverified" in replay
    assert "wrote" in report and "1 goal(s)" in report
    page = (tmp_path / "site" / "index.html").read_text()
    assert 'class="verify unverified"' in page and "unverified: no secret here" in page
    assert 'class="verify unverified"' in (tmp_path / "site1" / "g1.html").read_text()
    assert "+++ b/" in diff
    assert verify.startswith("ok g1: ") and "status parked_at_eyes" in verify
    assert "(unverified: no secret here: MACs not checked" in verify
    row = json.loads(verify_json)["goals"][0]
    assert (row["ok"], row["verified"], row["status"]) == (True, False, "parked_at_eyes")
    assert "warn secret: none here: a reviewer clone (records of g1" in doctor
    assert "copy the runner's secret" in doctor and ", 0 fail" in doctor


def _commit_on_goal_branch(clone: Path, path: str, edit: bytes, to: bytes) -> None:
    git(clone, "branch", "-q", "harness/g1", "origin/harness/g1")
    git(clone, "checkout", "-q", "harness/g1")
    target = clone / path
    data = target.read_bytes()
    assert edit in data, (path, data[:400])
    target.write_bytes(data.replace(edit, to, 1))
    git(clone, "commit", "-qam", "an edit pushed by someone without the secret")
    git(clone, "checkout", "-q", "main")


def test_verify_without_the_secret_finds_an_edited_ledger_line(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    clone, env = _reviewer(runner, tmp_path)
    segment = next((runner.worktree / "ledger" / "g1" / "events").glob("*.jsonl"))
    rel = segment.relative_to(runner.worktree).as_posix()
    _commit_on_goal_branch(clone, rel, b'"exit_code":0', b'"exit_code":1')
    proc = harness_in(clone, env, "verify")
    assert proc.returncode == 3, proc
    assert proc.stdout.startswith("FAIL g1: ") and ".jsonl" in proc.stdout


def test_verify_without_the_secret_finds_a_cell_the_chain_does_not_hold(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    clone, env = _reviewer(runner, tmp_path)
    cell = json.loads((runner.worktree / "ledger" / "g1" / "state.json").read_bytes())
    head = cell["position"]["hash"]
    _commit_on_goal_branch(clone, "ledger/g1/state.json", head.encode(), b"0" * len(head))
    proc = harness_in(clone, env, "verify", "g1")
    assert proc.returncode == 3, proc
    assert "which the ledger's chain does not hold" in proc.stdout


def test_verify_without_the_secret_finds_a_forged_approval(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    clone, env = _reviewer(runner, tmp_path)
    approval = clone / "goals" / "g1.approval"
    lines = approval.read_text().splitlines(keepends=True)
    body = next(i for i, text in enumerate(lines) if text.startswith("-----BEGIN")) + 2
    lines[body] = lines[body][:10] + ("A" if lines[body][10] != "A" else "B") + lines[body][11:]
    approval.write_text("".join(lines))
    git(clone, "commit", "-qam", "a forged approval")
    proc = harness_in(clone, env, "verify")
    assert proc.returncode == 3, proc
    assert "FAIL g1: goals/g1.approval: record 1: " in proc.stdout


def test_no_secret_is_made_and_nothing_runs_in_a_reviewer_clone(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    clone, env = _reviewer(runner, tmp_path)
    refs = git(clone, "for-each-ref")
    made = harness_in(clone, env, "secret", "new")
    assert made.returncode == 3, made
    assert "this clone holds records of g1 made with a runner's secret" in made.stderr
    assert "copy the runner's secret" in made.stderr and "--force" in made.stderr
    assert not (tmp_path / "laptop-config" / "goal-harness" / "secret").exists()
    ran = harness_in(clone, env, "run")
    assert ran.returncode == 3, ran
    assert "this is a reviewer clone" in ran.stderr and "secret new" not in ran.stderr
    cron = harness_in(clone, env, "ci", "cron")
    assert "does not exist yet: copy the runner's secret there" in cron.stdout
    assert git(clone, "for-each-ref") == refs
    assert git(clone, "status", "--porcelain") == ""
    forced = harness_in(clone, env, "secret", "new", "--force")
    assert forced.returncode == 0, forced
    assert (tmp_path / "laptop-config" / "goal-harness" / "secret").exists()


@pytest.mark.parametrize("records", [False, True])
def test_a_clone_without_records_is_still_told_to_make_a_secret(
    managed: ManagedFactory, tmp_path: Path, records: bool
) -> None:
    """Only records made elsewhere make a reviewer clone: a new repository's first runner
    still gets `harness secret new` as its advice."""
    runner = managed()
    if records:
        runner.harness("run", check=0)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(runner.root), str(clone))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_SECRET")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    ran = harness_in(clone, env, "run")
    assert ran.returncode == 3, ran
    assert ("secret new" in ran.stderr) is not records
    assert ("reviewer clone" in ran.stderr) is records
