"""A damaged object store is named as damaged (issue 30, item 12): a cut pack or a lost
object is never read as "the repository has no commits yet" (gitrepo.Repo.missing_commit);
and objects a `git gc --prune=now` beside a run removed never strand a goal: what the
worktree still holds is written again, and what it cannot is named with the way back that
needs no remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git


def _cut_pack(repo: ManagedRepo) -> str:
    git(repo.root, "gc", "-q")
    [pack] = (repo.root / ".git" / "objects" / "pack").glob("*.pack")
    pack.chmod(0o644)
    pack.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    return f"packfile .git/objects/pack/{pack.name} does not match index"


def _lost_head(repo: ManagedRepo) -> str:
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "one more")
    oid = git(repo.root, "rev-parse", "HEAD")
    (repo.root / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    return f"refs/heads/main names git object {oid}, which git cannot read: "


def _broken_ref(repo: ManagedRepo) -> str:
    ref = Path(repo.root / ".git" / "refs" / "heads" / "main")
    git(repo.root, "pack-refs", "--all", "--prune")  # a loose ref file, as a commit leaves it
    ref.write_text("")  # as a power cut can leave it
    return "refs/heads/main is a broken ref (empty or not an object id"


@pytest.mark.parametrize("damage", [_cut_pack, _lost_head, _broken_ref])
def test_a_damaged_store_is_named_never_read_as_an_empty_repository(
    managed: ManagedFactory, damage: object
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    assert callable(damage)
    expected = damage(repo)
    for command in (("status",), ("verify",), ("run",), ("replay", "g1")):
        refused = repo.harness(*command, check=3)
        [line] = refused.stderr.splitlines()
        assert line.startswith(f"harness: {repo.root}: ") and expected in line, (command, line)
        assert "no commits yet" not in line
    doctor = repo.harness("doctor", check=3).stdout
    assert "fail repository: " in doctor and expected in doctor and "no commits" not in doctor


# ---- objects pruned during a run (remote.md, "Objects pruned during a run") -------------

# The build plays both racing processes, so that their interleaving is the one that strands
# a goal, every time: `git add` writes the file's blob, then `git gc --prune=now` reads the
# index as it was before the add and removes the blob, then the add's new index lands,
# naming the removed blob. Every `git write-tree` of that index fails from then on.
RACE = """
echo right > value.txt
index=$(git rev-parse --git-path index)
cp "$index" "$TEST_COUNTER_DIR/index.before"
git add value.txt
cp "$index" "$TEST_COUNTER_DIR/index.after"
cp "$TEST_COUNTER_DIR/index.before" "$index"
git -C "$ROOT" gc -q --prune=now
cp "$TEST_COUNTER_DIR/index.after" "$index"
git cat-file -e "$(git rev-parse :value.txt)" 2>/dev/null && echo "the race did not happen" >&2
"""


@pytest.mark.bare("the build runs git in the repository, whose .git a contained step cannot write")
def test_a_prune_beside_a_run_never_strands_the_goal(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-1")
    goal = base_goal() | {"build": {"run": ["sh", "-c", RACE], "timeout": "60s"}}
    repo.commit_goal_change(goal)
    repo.harness("approve", "g1", "--key", str(repo.key.private), check=0)
    git(repo.root, "commit", "-qam", "approve")
    env = repo.env | {"ROOT": str(repo.root)}
    ran = repo.harness("run", env=env)
    assert "the race did not happen" not in ran.stderr
    assert ran.returncode == 0, ran.stderr  # the index is made again; the blob written again
    assert repo.status()["status"] == "completed"
    assert repo.verified().startswith("ok g1: ")
    assert git(repo.worktree, "show", "HEAD:value.txt") == "right"


def _loose(repo: ManagedRepo, oid: str) -> Path:
    path = repo.root / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.is_file(), f"{oid} is not a loose object"
    return path


def test_a_pruned_head_tree_the_worktree_holds_is_written_again(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-2")
    repo.harness("run", "--max-steps", "2", check=0)
    _loose(repo, git(repo.worktree, "rev-parse", "HEAD^{tree}")).unlink()  # as a prune leaves
    assert repo.harness("verify", "g1", check=3).stdout.startswith("FAIL g1: ")
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.verified().startswith("ok g1: ")


def test_a_pruned_head_commit_is_named_with_the_checkpoint_to_put_back(
    managed: ManagedFactory,
) -> None:
    repo = managed(mode="fix-on-2")
    repo.harness("run", "--max-steps", "2", check=0)
    head, parent = git(repo.worktree, "rev-parse", "HEAD", "HEAD^").split()
    _loose(repo, head).unlink()  # the branch moved to a commit a prune had just removed
    before = repo.snapshot()
    refused = repo.harness("run", check=3)
    [line] = refused.stderr.splitlines()
    put_back = f"git -C {repo.worktree} update-ref HEAD {parent}"
    assert line.startswith(f"harness: g1: refused: {repo.worktree}: the head commit {head} ")
    assert (
        f"the checkpoint before it, {parent}, is intact: `{put_back}` puts the branch back on "
        "it and the next `harness run` rolls the worktree's events forward onto it; the "
        "worktree and its uncommitted events are intact: do not remove it"
    ) in line, line
    assert repo.snapshot() == before
    git(repo.worktree, "update-ref", "HEAD", parent)  # as the line says: no remote needed
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert repo.count("build") == ["1", "2"]
    assert repo.verified().startswith("ok g1: ")
