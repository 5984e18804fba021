"""What ships is exactly what was reviewed: `git diff <base> <ship commit>` is, byte for
byte, the `harness diff` the owner signed, also when the base has a `ledger/` folder of its
own (`harness init` writes `ledger/.gitkeep`) (issue 30, item 6)."""

from __future__ import annotations

from tests.managed import ManagedFactory, base_goal, git

# The ship step writes what it was handed: the base, and the commit it would publish.
SHIP = {
    "run": [
        "sh",
        "-c",
        'echo "$HARNESS_SHIP_BASE $HARNESS_SHIP_COMMIT" > "$TEST_COUNTER_DIR/shipped"',
    ]
}


def test_the_ship_commit_changes_only_what_harness_diff_showed(managed: ManagedFactory) -> None:
    repo = managed(
        mode="fix-on-1",
        goal=base_goal() | {"ship": SHIP},
        files={"ledger/.gitkeep": "", "ledger/README": "the harness's records\n"},
    )
    repo.harness("run", check=0)
    reviewed = repo.harness("diff", "g1", check=0).stdout
    assert "value.txt" in reviewed and "ledger" not in reviewed
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    base, commit = (repo.counters / "shipped").read_text().split()
    shipped = git(repo.root, "diff", base, commit)
    assert shipped + "\n" == reviewed
    assert git(repo.root, "ls-tree", "-r", "--name-only", commit, "ledger").splitlines() == [
        "ledger/.gitkeep",
        "ledger/README",
    ]
