"""A failed ship step is not the end: it waits at ship_failed, says why, and ships again."""

from __future__ import annotations

import json

from tests.managed import ManagedFactory, base_goal

# Fails while $TEST_COUNTER_DIR/ship-fails exists, printing why (as a real push would).
SHIP = {
    "run": [
        "sh",
        "-c",
        'echo attempt >> "$TEST_COUNTER_DIR/ship.log"; '
        'echo "$HARNESS_SHIP_COMMIT" >> "$TEST_COUNTER_DIR/ship-commit.log"; '
        'if [ -e "$TEST_COUNTER_DIR/ship-fails" ]; then '
        "echo 'fatal: ../remote.git does not appear to be a git repository' >&2; exit 1; fi",
    ]
}


def test_failed_ship_waits_at_ship_failed_and_a_second_decision_ships(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP})
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    (repo.counters / "ship-fails").write_text("")

    failed = repo.harness("ship", "g1", "--key", str(repo.key.private), check=5)
    assert "needs_attention gate=ship_failed (the ship step exited 1: fatal: ../remote.git" in (
        failed.stdout
    )
    row = repo.status()
    assert (row["status"], row["gate"]) == ("needs_attention", "ship_failed")
    assert "exited 1" in row["gate_detail"] and "does not appear" in row["gate_detail"]
    line = repo.harness("status", "g1", check=0).stdout
    assert "gate=ship_failed the ship step exited 1: fatal: ../remote.git" in line
    # A run on its own never retries it, and `unpark` is not the way across.
    repo.harness("run", check=0)
    assert repo.count("ship") == ["attempt"]
    refused = repo.harness("unpark", "g1", "--key", str(repo.key.private), check=2)
    assert "waits at gate ship_failed (use `harness ship`)" in refused.stderr

    (repo.counters / "ship-fails").unlink()
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert repo.count("ship") == ["attempt", "attempt"]
    # The retry is given the same commit to ship: a push that already happened is a no-op.
    first, again = repo.count("ship-commit")
    assert first == again and len(first) == 40
    assert repo.status()["status"] == "completed"
    replay = repo.harness("replay", "g1", "--format", "json", check=0).stdout
    types = [e["type"] for e in json.loads(replay)["events"]]
    assert "goal.failed" not in types and types[-1] == "goal.completed"
    repo.harness("verify", "g1", check=0)
