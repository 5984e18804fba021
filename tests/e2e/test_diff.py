"""`harness diff`: the goal's code change without ledger/, exactly as git prints it."""

from __future__ import annotations

import json
import subprocess

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

SHIP = {"run": ["sh", "-c", "true"]}


def _git_out(repo: ManagedRepo, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo.root, check=True, capture_output=True, text=True
    ).stdout


def _events(repo: ManagedRepo) -> list[dict[str, object]]:
    replay = repo.harness("replay", "g1", "--format", "json", check=0).stdout
    events: list[dict[str, object]] = json.loads(replay)["events"]
    return events


def test_diff_is_git_diff_of_base_to_gate_commit_without_the_ledger(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    base = git(repo.root, "rev-parse", "main")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    gated = [e for e in _events(repo) if e["type"] == "goal.gated"][-1]
    gate_commit = str(gated["data"]["commit"])  # type: ignore[index]

    shown = repo.harness("diff", "g1", check=0).stdout
    assert shown == _git_out(repo, "diff", base, gate_commit, "--", ".", ":!ledger")
    assert "+right" in shown and "ledger/" not in shown
    stat = repo.harness("diff", "g1", "--stat", check=0).stdout
    assert stat == _git_out(repo, "diff", "--stat", base, gate_commit, "--", ".", ":!ledger")
    assert " value.txt | 1 +" in stat

    document = json.loads(repo.harness("diff", "g1", "--json", check=0).stdout)
    assert (document["from"], document["to"]) == (base, gate_commit)
    assert document["files"] == [{"path": "value.txt", "added": 1, "deleted": 0, "binary": False}]
    assert document["patch"] == shown


def test_diff_of_one_iteration_is_only_what_that_build_changed(managed: ManagedFactory) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    repo.harness("run", check=0)
    first = repo.harness("diff", "g1", "--iteration", "1", check=0).stdout
    assert "new file mode" in first and "+wrong" in first and "right" not in first
    second = repo.harness("diff", "g1", "--iteration", "2", check=0).stdout
    lines = second.splitlines()
    changed = [x for x in lines if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    assert changed == ["-wrong", "+right"]
    assert "ledger/" not in first + second and "new file mode" not in second
    # From the commit before build 2 to the one its judge started at: git's own output.
    started = {
        (e["step"], e["iteration"]): e["data"] for e in _events(repo) if e["type"] == "step.started"
    }
    before, after = started[("build", 2)]["base"], started[("judge", 2)]["base"]  # type: ignore[index]
    assert second == _git_out(repo, "diff", str(before), str(after), "--", ".", ":!ledger")

    missing = repo.harness("diff", "g1", "--iteration", "3", check=2)
    assert missing.stderr.strip() == (
        "harness: --iteration: goal g1 has no build 3 (expected one of: 1, 2)"
    )
