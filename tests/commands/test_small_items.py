"""Issue 30 item 13, the small things a team met: each with the command a user types."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.model.limits import show_duration
from harness.record.visible import tidy_numbers
from tests.managed import SECRET, ManagedFactory, ManagedRepo, base_goal, git


def _plain(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"HARNESS_SECRET": SECRET}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_a_command_under_ci_typed_without_it_gets_a_hint(tmp_path: Path) -> None:
    for name, meant in (("cron", "ci cron"), ("systemd", "ci systemd"), ("github", "ci github")):
        proc = _plain(tmp_path, name)
        assert proc.returncode == 2
        assert f"No such command '{name}': did you mean `harness {meant}`?" in proc.stderr


def test_status_check_help_names_every_exit_code(tmp_path: Path) -> None:
    text = " ".join(_plain(tmp_path, "status", "--help").stdout.split())
    assert (
        "Exit 10 if a goal is parked at eyes, 11 if one needs attention, 12 if one is stale."
        in text
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(172800, "48h"), (86400 * 3, "72h"), (5400, "90m"), (45, "45s"), (3725, "1h2m5s"),
     (3660, "61m"), (0.5, "0.5s")],
)  # fmt: skip
def test_durations_read_as_a_goal_file_writes_them(seconds: float, shown: str) -> None:
    assert show_duration(seconds) == shown


def test_json_numbers_carry_no_float_noise() -> None:
    noisy = {"cost_usd": 0.1 + 0.2, "runs": [{"seconds": 1 / 3}], "turns": 3, "id": "g1"}
    assert json.dumps(tidy_numbers(noisy)) == (
        '{"cost_usd": 0.3, "runs": [{"seconds": 0.333333}], "turns": 3, "id": "g1"}'
    )


def test_a_second_approve_of_the_same_bytes_adds_nothing(managed: ManagedFactory) -> None:
    repo = managed()
    approval = repo.root / "goals" / "g1.approval"
    before = approval.read_bytes()
    again = repo.harness("approve", "g1", "--key", str(repo.key.private), check=0).stdout
    assert "already approved goals/g1.yaml" in again and "(nothing written)" in again
    assert approval.read_bytes() == before


def test_approve_push_commits_both_files_and_pushes(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed(approve=False)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(repo.root, "remote", "add", "origin", str(origin))
    git(repo.root, "push", "-q", "origin", "main")
    goal = repo.root / "goals" / "g1.yaml"
    goal.write_text(goal.read_text().replace("max_iterations: 3", "max_iterations: 4"))
    done = repo.harness("approve", "g1", "--key", str(repo.key.private), "--push", "origin")
    assert done.returncode == 0, done
    assert "committed goals/g1.yaml and goals/g1.approval" in done.stdout
    assert "and pushed main to origin" in done.stdout
    assert git(repo.root, "status", "--porcelain") == ""
    assert git(origin, "show", "main:goals/g1.yaml") == goal.read_text().strip()
    assert "-----BEGIN SSH SIGNATURE-----" in git(origin, "show", "main:goals/g1.approval")


def _line(repo: ManagedRepo) -> str:
    return repo.harness("status", check=0).stdout


def test_an_approval_not_committed_says_so(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    assert "waiting for approval (run `harness approve g1 --key KEY`)" in _line(repo)
    repo.harness("approve", "g1", "--key", str(repo.key.private), check=0)
    shown = _line(repo)
    assert "goals/g1.approval in the working copy is not committed" in shown
    assert json.loads(repo.harness("status", "--json", check=0).stdout)[0]["approval_uncommitted"]
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve g1")
    assert "waiting for approval" not in _line(repo)


def test_run_json_prints_its_document_when_refused_before_any_goal(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "not managed")
    proc = _plain(tmp_path, "run", "--json")
    assert proc.returncode == 2
    document = json.loads(proc.stdout)
    assert document["exit_code"] == 2 and document["goals"] == []
    assert "not a harness repository" in document["error"]
    assert "not a harness repository" in proc.stderr


def test_the_script_template_passes_check(managed: ManagedFactory) -> None:
    repo = managed()
    made = repo.harness("new", "g2", check=0).stdout
    assert "wrote scripts/agent.sh" in made
    checked = repo.harness("check", "g2", check=0).stdout
    assert "ok: 1 goal(s)" in checked
    built = subprocess.run([str(repo.root / "scripts" / "agent.sh")], capture_output=True)
    assert built.returncode == 1 and b"no build written yet" in built.stderr


def test_a_stale_line_names_its_duration_as_a_goal_file_does(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"halt": {"stale_after": "2h"}}, mode="never")
    repo.harness("run", "--max-steps", "1", check=0)
    later = repo.env | {"HARNESS_NOW": "2099-01-01T00:00:00Z"}
    shown = repo.harness("status", env=later, check=0).stdout
    assert "longer than halt.stale_after 2h:" in shown
