"""A damaged object store is named as damaged (issue 30, item 12): a cut pack or a lost
object is never read as "the repository has no commits yet" (gitrepo.Repo.missing_commit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, git


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
