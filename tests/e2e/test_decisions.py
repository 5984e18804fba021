"""Signed human decisions: ship exactly once, unpark a gate, rotate owners, refuse forgeries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git, keygen_verifies, make_key

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"; touch SHIPPED']}


@pytest.fixture
def parked(managed: ManagedFactory) -> ManagedRepo:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    return repo


def _approval_records(repo: ManagedRepo) -> list[str]:
    return (repo.root / "goals" / "g1.approval").read_text().split("\n\n")


def test_ship_with_owner_key_ships_exactly_once(parked: ManagedRepo) -> None:
    out = parked.harness("ship", "g1", "--key", str(parked.key.private), check=0).stdout
    assert "signed `ship` for g1" in out and "decision ship by owner@example.com" in out
    assert parked.count("ship") == ["shipped"]
    assert parked.status()["status"] == "completed"
    again = parked.harness("ship", "g1", "--key", str(parked.key.private), check=2)
    assert "not waiting at a gate" in again.stderr
    git(parked.root, "add", "-A")
    git(parked.root, "commit", "-qm", "record the ship decision")
    parked.harness("run", check=0)
    assert parked.count("ship") == ["shipped"]


def test_ship_with_non_owner_key_is_refused(parked: ManagedRepo, tmp_path: Path) -> None:
    before = (parked.root / "goals" / "g1.approval").read_bytes()
    stranger = make_key(tmp_path, "stranger")
    proc = parked.harness("ship", "g1", "--key", str(stranger.private), check=3)
    assert "not listed in .harness/owners" in proc.stderr
    assert (parked.root / "goals" / "g1.approval").read_bytes() == before
    assert parked.count("ship") == [] and parked.status()["gate"] == "ship"


def test_decision_signed_without_secret_is_honoured_from_the_control_branch(
    parked: ManagedRepo,
) -> None:
    env = {k: v for k, v in parked.env.items() if k != "HARNESS_SECRET"}
    out = parked.harness("ship", "g1", "--key", str(parked.key.private), env=env, check=0).stdout
    assert "next: commit goals/g1.approval" in out
    assert parked.count("ship") == []
    parked.harness("run", check=0)
    assert parked.count("ship") == []  # not on the control branch yet
    git(parked.root, "add", "-A")
    git(parked.root, "commit", "-qm", "ship g1")
    parked.harness("run", check=0)
    parked.harness("run", check=0)
    assert parked.count("ship") == ["shipped"]


def test_decision_for_an_earlier_state_is_not_honoured(
    parked: ManagedRepo, managed: ManagedFactory
) -> None:
    env = {k: v for k, v in parked.env.items() if k != "HARNESS_SECRET"}
    parked.harness("ship", "g1", "--key", str(parked.key.private), env=env, check=0)
    statement = _approval_records(parked)[-1]
    forged = statement.replace("ledger 10:", "ledger 9:")
    assert forged != statement
    (parked.root / "goals" / "g1.approval").write_text(
        "\n\n".join([*_approval_records(parked)[:-1], forged])
    )
    git(parked.root, "add", "-A")
    git(parked.root, "commit", "-qm", "an edited decision")
    parked.harness("run", check=0)
    assert parked.count("ship") == [] and parked.status()["gate"] == "ship"


def test_unpark_decisions_verify_with_ssh_keygen(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(mode="nothing")
    repo.harness("run", check=0)
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("unpark", "g1", "--key", str(repo.key.private), env=env, check=0)
    statement = keygen_verifies(repo, _approval_records(repo)[-1], tmp_path)
    assert "decision unpark no_progress\ncommit " in statement


def test_ship_decision_verifies_with_ssh_keygen(parked: ManagedRepo, tmp_path: Path) -> None:
    env = {k: v for k, v in parked.env.items() if k != "HARNESS_SECRET"}
    parked.harness("ship", "g1", "--key", str(parked.key.private), env=env, check=0)
    statement = keygen_verifies(parked, _approval_records(parked)[-1], tmp_path)
    assert "decision ship\ncommit " in statement and "\nledger 10:" in statement


def test_cut_off_ship_parks_as_outcome_unknown_and_is_not_retried(parked: ManagedRepo) -> None:
    parked.harness(
        "ship",
        "g1",
        "--key",
        str(parked.key.private),
        env=parked.env | {"HARNESS_FAILPOINT": "in_ship"},
        check=-9,
    )
    parked.harness("run", check=0)
    row = parked.status()
    assert (row["status"], row["gate"]) == ("parked_at_eyes", "ship_outcome_unknown")
    parked.harness("run", check=0)
    assert parked.count("ship") == []
    parked.harness("unpark", "g1", "--key", str(parked.key.private), check=0)
    assert parked.status()["status"] == "completed"
    assert parked.count("ship") == []


def test_unpark_no_progress_and_extend_budget(managed: ManagedFactory) -> None:
    repo = managed(mode="nothing", goal=base_goal() | {"budget": {"max_iterations": 3}})
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "no_progress"
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "budget_exhausted")
    assert repo.count("build") == ["1", "2", "3"]
    bad = repo.harness(
        "unpark", "g1", "--key", str(repo.key.private), "--extend-budget", "bogus=3", check=2
    )
    assert "bogus: is not a budget key" in bad.stderr
    repo.harness(
        "unpark", "g1", "--key", str(repo.key.private), "--extend-budget", "iterations=4", check=0
    )
    assert repo.count("build") == ["1", "2", "3", "4"]
    assert repo.status()["budget_limit"]["iterations"] == 4


@pytest.mark.parametrize(
    ("mode", "path"), [("tamper-owners", ".harness/owners"), ("tamper-goal", "goals/g1.yaml")]
)
def test_agent_editing_owners_or_its_goal_is_tamper_and_restored(
    managed: ManagedFactory, mode: str, path: str
) -> None:
    repo = managed(mode=mode)
    original = (repo.root / path).read_bytes()
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "tamper")
    assert (repo.worktree / path).read_bytes() == original
    assert git(repo.worktree, "show", f"HEAD:{path}") + "\n" == original.decode()
    assert path in repo.harness("replay", "g1", check=0).stdout
    assert repo.count("judge") == []


def test_agent_sees_no_secret_or_agent_sockets(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(mode="env-dump")
    env = repo.env | {
        "HARNESS_SECRET_FILE": "/nonexistent",
        # In a folder of its own, as ssh-agent makes one: contained steps have the socket's
        # folder hidden, and a bind inside it (the counters') would be refused.
        "SSH_AUTH_SOCK": str(tmp_path / "ssh-agent" / "agent.1"),
        "GPG_AGENT_INFO": "/tmp/gpg:1:1",
        "HARNESS_KEY_PASSPHRASE": "pw",
    }
    repo.harness("run", env=env, check=0)
    seen = json.loads((repo.counters / "env.json").read_text())
    for name in (
        "HARNESS_SECRET",
        "HARNESS_SECRET_FILE",
        "SSH_AUTH_SOCK",
        "GPG_AGENT_INFO",
        "HARNESS_KEY_PASSPHRASE",
    ):
        assert name not in seen
    assert seen["HARNESS_GOAL"] == "g1" and "TEST_COUNTER_DIR" in seen


def test_owners_rotation_needs_a_pinned_owner(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(mode="never", goal=base_goal() | {"budget": {"max_iterations": 5}})
    repo.harness("run", "--max-steps", "1", check=0)
    newcomer = make_key(tmp_path, "newcomer")
    owners = repo.root / ".harness" / "owners"
    owners.write_text(owners.read_text() + f"new@example.com {newcomer.public}\n")
    git(repo.root, "commit", "-qam", "add an owner")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "owners_changed"
    import hashlib

    from harness.trust.approvals import append_record
    from harness.trust.sshsig import sign
    from harness.trust.statement import Statement

    goal_sha = hashlib.sha256((repo.root / "goals" / "g1.yaml").read_bytes()).hexdigest()
    rotate = Statement(
        goal="g1",
        sha256=goal_sha,
        decision=f"rotate-owners {hashlib.sha256(owners.read_bytes()).hexdigest()}",
    )
    approval = repo.root / "goals" / "g1.approval"
    append_record(approval, rotate, sign(rotate.to_bytes(), newcomer.private))
    git(repo.root, "commit", "-qam", "rotation signed by the newcomer")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "owners_changed"
    append_record(approval, rotate, sign(rotate.to_bytes(), repo.key.private))
    git(repo.root, "commit", "-qam", "rotation signed by the pinned owner")
    out = repo.harness("run", "--max-steps", "1", check=0).stdout
    assert "owners rotated to sha256=" in out and "by owner@example.com" in out
    row = repo.status()
    assert (row["status"], row["gate"]) == ("paused", None)
    assert (repo.count("build"), repo.count("judge")) == (["1"], ["1"])


DROP = "import os\nfrom pathlib import Path\nPath('migrations').mkdir(exist_ok=True)\nPath('migrations/0002_drop_users.sql').write_text('DROP TABLE users;\\n')\nPath('value.txt').write_text('right\\n')\n"


def test_destructive_migration_parks_and_only_an_owner_unparks(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    goal = base_goal() | {"build": {"run": [sys.executable, "drop_agent.py"]}}
    repo = managed(goal=goal, files={"drop_agent.py": DROP})
    repo.harness("run", check=0)
    row = repo.status()
    assert row["status"] == "parked_at_eyes"
    assert row["gate"] in ("destructive:schema_change", "destructive:data_deletion")
    out = repo.harness("replay", "g1", check=0).stdout
    assert "migrations/0002_drop_users.sql" in out
    assert repo.count("judge") == []
    stranger = make_key(tmp_path, "stranger")
    repo.harness("unpark", "g1", "--key", str(stranger.private), check=3)
    assert repo.status()["gate"] == row["gate"]
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    for _ in range(3):  # one signed unpark per destructive class the build hit
        if repo.status()["status"] != "parked_at_eyes":
            break
        repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("judge") == ["1"]


def test_declared_command_that_deploys_parks_before_anything_runs(managed: ManagedFactory) -> None:
    goal = base_goal() | {"judge": {"run": ["kubectl", "apply", "-f", "k8s/"]}}
    repo = managed(goal=goal)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("parked_at_eyes", "destructive:production_deploy")
    assert repo.count("build") == []
