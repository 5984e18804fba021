"""A team on many machines (issue 15): waiting for approval, runners that follow the
control branch, owners acting from a laptop clone. Real clones of a real bare remote."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

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


SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"; touch SHIPPED']}


def clone(seed: ManagedRepo, bare: Path, path: Path, secret: bool = True) -> ManagedRepo:
    subprocess.run(["git", "clone", "-q", str(bare), str(path)], check=True)
    env = {k: v for k, v in seed.env.items() if secret or k != "HARNESS_SECRET"}
    return ManagedRepo(path, seed.key, seed.counters, seed.goal_id, env)


def parked_team(managed: ManagedFactory, tmp_path: Path) -> tuple[Path, ManagedRepo]:
    """A bare remote and a runner clone whose `run --push origin` parked g1 at ship."""
    seed = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.root), str(bare)], check=True)
    runner = clone(seed, bare, tmp_path / "runner")
    runner.harness("run", "--push", "origin", check=0)
    assert runner.status()["gate"] == "ship"
    return bare, runner


def test_a_ship_pushed_from_a_laptop_is_shipped_by_the_runner(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    bare, runner = parked_team(managed, tmp_path)
    laptop = clone(runner, bare, tmp_path / "laptop", secret=False)
    key = str(laptop.key.private)
    out = laptop.harness("ship", "g1", "--key", key, "--push", "origin", check=0).stdout
    assert "(state read unverified: no secret here: not checked)" in out
    assert "pushed main to origin; the next `harness run --push origin` acts on it" in out
    assert laptop.count("ship") == []
    # The runner's checkout has main checked out: it is fast-forwarded, files included.
    runner.harness("run", "--push", "origin", check=0)
    assert runner.count("ship") == ["shipped"]
    assert runner.status()["status"] == "completed"
    assert (runner.root / "goals" / "g1.approval").read_text().count("decision ship") == 1
    assert git(runner.root, "status", "--porcelain") == ""
    runner.harness("run", "--push", "origin", check=0)
    assert runner.count("ship") == ["shipped"]


def test_a_diverged_control_branch_is_refused(managed: ManagedFactory, tmp_path: Path) -> None:
    bare, runner = parked_team(managed, tmp_path)
    laptop = clone(runner, bare, tmp_path / "laptop", secret=False)
    laptop.harness("ship", "g1", "--key", str(laptop.key.private), "--push", "origin", check=0)
    (runner.root / "notes.txt").write_text("a local commit nobody pushed\n")
    git(runner.root, "add", "notes.txt")
    git(runner.root, "commit", "-qm", "local")
    proc = runner.harness("run", "--push", "origin", check=3)
    assert "main: the control branch diverged from origin/main" in proc.stderr
    assert "nothing was run" in proc.stderr and "Traceback" not in proc.stderr
    assert runner.count("ship") == [] and runner.status()["gate"] == "ship"


def test_a_dirty_checkout_in_the_way_is_refused(managed: ManagedFactory, tmp_path: Path) -> None:
    bare, runner = parked_team(managed, tmp_path)
    laptop = clone(runner, bare, tmp_path / "laptop", secret=False)
    laptop.harness("ship", "g1", "--key", str(laptop.key.private), "--push", "origin", check=0)
    (runner.root / "goals" / "g1.approval").write_text("a local edit\n")
    proc = runner.harness("run", "--push", "origin", check=3)
    assert "cannot fast-forward the checked-out control branch to origin/main" in proc.stderr
    assert (runner.root / "goals" / "g1.approval").read_text() == "a local edit\n"
    assert runner.count("ship") == []
    # Unrelated local changes do not stand in the way.
    git(runner.root, "checkout", "--", "goals/g1.approval")
    (runner.root / "scratch.txt").write_text("mine\n")
    runner.harness("run", "--push", "origin", check=0)
    assert runner.count("ship") == ["shipped"]
    assert (runner.root / "scratch.txt").read_text() == "mine\n"


def test_a_fresh_clone_without_the_secret_reads_and_decides(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    bare, runner = parked_team(managed, tmp_path)
    laptop = clone(runner, bare, tmp_path / "laptop", secret=False)
    laptop.env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")  # no default secret file
    assert git(laptop.root, "branch", "--list", "harness/*") == ""  # only origin/harness/g1
    row = json.loads(laptop.harness("status", "--json", check=0).stdout)[0]
    assert (row["id"], row["status"], row["gate"], row["verified"]) == (
        "g1",
        "parked_at_eyes",
        "ship",
        False,
    )
    line = laptop.harness("status", "g1", check=0).stdout
    assert line.rstrip().endswith("gate=ship (unverified: no secret here: not checked)")
    replayed = laptop.harness("replay", "g1", check=0)
    assert replayed.stdout == runner.harness("replay", "g1", check=0).stdout
    assert replayed.stderr == "harness: g1: unverified: no secret here: not checked\n"
    diffed = laptop.harness("diff", "g1", check=0)  # the change the owner is asked to sign
    assert diffed.stdout == runner.harness("diff", "g1", check=0).stdout != ""
    assert diffed.stderr == replayed.stderr
    out = laptop.harness("ship", "g1", "--key", str(laptop.key.private), check=0).stdout
    assert "signed `ship` for g1" in out and "no secret here: not checked" in out
    assert "next: commit goals/g1.approval" in out
    git(laptop.root, "commit", "-qam", "ship g1")
    git(laptop.root, "push", "-q", "origin", "main")
    runner.harness("run", "--push", "origin", check=0)
    assert runner.count("ship") == ["shipped"]


def test_a_record_forged_without_the_secret_is_refused_by_the_runner(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    bare, runner = parked_team(managed, tmp_path)
    laptop = clone(runner, bare, tmp_path / "laptop", secret=False)
    laptop.env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    # Without the secret anyone can rewrite the cell: say it parked at another commit.
    git(laptop.root, "worktree", "add", "-q", "-b", "harness/g1", "../forge", "origin/harness/g1")
    forge = tmp_path / "forge"
    cell_path = forge / "ledger" / "g1" / "state.json"
    cell = json.loads(cell_path.read_text())
    cell["gate_commit"] = git(laptop.root, "rev-parse", "main")
    cell_path.write_text(json.dumps(cell))
    git(forge, "commit", "-qam", "forged")
    git(forge, "push", "-q", "origin", "harness/g1")
    # The laptop reads the forged state unverified and signs a decision bound to it.
    out = laptop.harness("ship", "g1", "--key", str(laptop.key.private), "--push", "origin")
    assert out.returncode == 0, out.stderr
    assert f"at commit {cell['gate_commit']}" in out.stdout
    proc = runner.harness("run", "--push", "origin")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "MAC" in proc.stderr
    assert runner.count("ship") == []
