"""A team on many machines (issue 15): waiting for approval, runners that follow the
control branch, owners acting from a laptop clone. Real clones of a real bare remote."""

from __future__ import annotations

import hashlib
import json

import yaml

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git


def add_goal(repo: ManagedRepo, goal_id: str, approve: bool) -> None:
    goal = base_goal(goal_id)
    (repo.root / "goals" / f"{goal_id}.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
    if approve:
        repo.harness("approve", goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", f"add {goal_id}")


def rows(repo: ManagedRepo) -> dict[str, dict[str, object]]:
    out = repo.harness("status", "--json", check=0).stdout
    return {row["id"]: row for row in json.loads(out)}


def test_an_unapproved_goal_waits_and_the_others_run(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-1")
    add_goal(repo, "g2", approve=False)
    proc = repo.harness("run", check=0)
    assert proc.stderr.splitlines() == [
        "harness: g2: waiting for approval: goals/g2.approval: goal g2 is not approved: "
        "run `harness approve g2 --key PRIVKEY`"
    ]
    assert rows(repo)["g1"]["status"] == "completed"
    waiting = rows(repo)["g2"]
    assert (waiting["status"], waiting["waiting_for_approval"]) == ("pending", True)
    assert rows(repo)["g1"]["waiting_for_approval"] is False
    line = repo.harness("status", "g2", check=0).stdout
    assert line.rstrip().endswith("waiting for approval (run `harness approve g2 --key KEY`)")
    assert git(repo.root, "branch", "--list", "harness/g2") == ""
    report = json.loads(repo.harness("run", "--json", check=0).stdout)
    assert report["exit_code"] == 0
    assert [g["result"] for g in report["goals"]] == ["ok", "waiting_for_approval"]


def test_an_edited_goal_waits_for_re_approval(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    add_goal(repo, "g2", approve=True)
    goal = base_goal("g2") | {"budget": {"max_iterations": 9}}
    (repo.root / "goals" / "g2.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
    git(repo.root, "commit", "-qam", "edit g2 after approving it")
    proc = repo.harness("run", "g2", check=0)
    assert "harness: g2: waiting for approval: goals/g2.approval: the goal file changed" in (
        proc.stderr
    )
    assert repo.count("build") == []
    assert rows(repo)["g2"]["waiting_for_approval"] is True


def test_a_forged_approval_is_still_refused(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    add_goal(repo, "g2", approve=True)
    path = repo.root / "goals" / "g2.approval"
    text = path.read_text()
    # The statement names the edited bytes, the signature is the old one's: forged.
    goal = base_goal("g2") | {"budget": {"max_iterations": 9}}
    (repo.root / "goals" / "g2.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
    new_sha = hashlib.sha256((repo.root / "goals" / "g2.yaml").read_bytes()).hexdigest()
    old_sha = text.split("sha256 ", 1)[1].split("\n", 1)[0]
    path.write_text(text.replace(old_sha, new_sha))
    git(repo.root, "commit", "-qam", "forge")
    assert "does not verify" in repo.harness("run", check=3).stderr
    assert repo.count("build") == []
    assert rows(repo)["g2"]["waiting_for_approval"] is False
    # A forged approval of an older version is refused too, not taken as "waiting".
    goal = base_goal("g2") | {"budget": {"max_iterations": 8}}
    (repo.root / "goals" / "g2.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
    git(repo.root, "commit", "-qam", "edit again")
    assert "does not verify" in repo.harness("run", "g2", check=3).stderr
