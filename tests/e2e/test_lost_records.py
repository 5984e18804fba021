"""A goal whose record this clone had and cannot find (issue 30, item 12): its branch
deleted or broken, its worktree removed or kept. `verify` (without ids too), `status` and
`run` each refuse it in one line (exit 3) naming the branch and how to put it back, never
skip it, show it as a new goal, start it afresh with a new budget, or pass on git's "Not a
valid object name HEAD"; a goal that merely never ran is none of that (cli.md, "A lost
record")."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

BRANCH_REF = ".git/refs/heads/harness/g1"


def _with_a_goal_never_run(repo: ManagedRepo) -> None:
    (repo.root / "goals" / "g2.yaml").write_text(yaml.safe_dump(base_goal("g2"), sort_keys=False))
    repo.harness("approve", "g2", "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "a goal approved and never run")


@pytest.mark.parametrize("loss", ["deleted", "broken"])
def test_a_goal_whose_branch_is_gone_fails_verify_status_and_run(
    managed: ManagedFactory, loss: str
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    _with_a_goal_never_run(repo)
    assert repo.harness("verify", check=0).stdout.splitlines()[0].startswith("ok g1: ")
    last = git(repo.root, "rev-parse", "harness/g1")
    git(repo.root, "worktree", "remove", "--force", str(repo.worktree))
    if loss == "deleted":
        git(repo.root, "update-ref", "-d", "refs/heads/harness/g1")
        expected = (
            "branch harness/g1 is missing (deleted), yet this clone kept the goal's record "
            "(.git/harness/records/g1): goal g1's record cannot be read here and nothing was "
            "run or started afresh; put the branch back with `git update-ref "
            "refs/heads/harness/g1 <commit>` (`git fsck --lost-found` lists the commits no "
            "branch holds), or fetch it from a remote or another clone; if the goal was "
            "retired on purpose, remove .git/harness/records/g1"
        )
    else:
        git(repo.root, "pack-refs", "--all", "--prune")
        (repo.root / BRANCH_REF).parent.mkdir(parents=True, exist_ok=True)
        (repo.root / BRANCH_REF).write_bytes(b"")  # as a power cut can leave it
        expected = "branch harness/g1 is broken (its ref is empty or not a commit id"
    before = repo.snapshot()
    verified = repo.harness("verify", check=3)  # no ids: every goal file's and record's
    [line] = verified.stdout.splitlines()
    assert line.startswith(f"FAIL g1: {expected}"), line
    assert verified.stderr == ""  # g2 never ran: neither a failure nor a note
    for command, prefix in ((("status",), "harness: "), (("run", "g1"), "harness: g1: refused: ")):
        refused = repo.harness(*command, check=3)
        [line] = refused.stderr.splitlines()
        assert line.startswith(prefix + expected), (command, line)
    # Nothing was started afresh: no new branch, no worktree, no build.
    assert repo.snapshot() == before and repo.count("build") == ["1"]
    assert not repo.worktree.exists()
    assert loss == "broken" or git(repo.root, "branch", "--list", "harness/g1") == ""
    # What the line says to do brings the record back as it was.
    if loss == "broken":
        (repo.root / BRANCH_REF).unlink()
    git(repo.root, "update-ref", "refs/heads/harness/g1", last)
    assert repo.harness("verify", check=0).stdout.startswith("ok g1: ")
    assert repo.status()["status"] == "completed"


def test_a_deleted_branch_with_its_worktree_kept_is_said_in_one_line(
    managed: ManagedFactory,
) -> None:
    repo = managed(mode="fix-on-2")
    repo.harness("run", "--max-steps", "2", check=0)  # mid-run: build[1] done, judge next
    git(repo.root, "update-ref", "-d", "refs/heads/harness/g1")
    before = repo.snapshot()
    lines = []
    for command in (("run",), ("status",), ("verify",), ("verify", "g1")):
        refused = repo.harness(*command, check=3)
        [line] = (refused.stderr or refused.stdout).splitlines()
        assert "Not a valid object name" not in line
        lines.append(line)
    found = re.search(
        rf"{re.escape(str(repo.worktree))}: the goal branch 'harness/g1' is missing \(deleted\) "
        r"while its worktree is kept on it; the worktree and its uncommitted events are intact: "
        r"do not remove it; put the branch back with `git update-ref refs/heads/harness/g1 "
        r"([0-9a-f]{40})`, or fetch it from a remote or another clone$",
        lines[0],
    )
    assert found is not None and lines[0].startswith("harness: g1: refused: "), lines[0]
    assert lines[1] == f"harness: {found[0]}" and lines[2] == lines[3] == f"FAIL g1: {found[0]}"
    assert repo.snapshot() == before
    # Put back as the line says, the goal goes on from where it was.
    git(repo.root, "update-ref", "refs/heads/harness/g1", found[1])
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "2"] and repo.count("judge") == ["1", "2"]
