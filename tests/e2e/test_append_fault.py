"""An fsync that fails (EIO) while a ledger line is appended (issue 30, item 12): the line,
written but maybe never to reach the disk, is cut off again before the error is reported,
so the next run never builds on it (fsutil.append_line; failpoints.md, "Fault points")."""

from __future__ import annotations

import json

from tests.managed import ManagedFactory

SEGMENT = "ledger/g1/events/000001.jsonl"


def test_a_failed_fsync_on_append_leaves_no_line_the_next_run_builds_on(
    managed: ManagedFactory,
) -> None:
    repo = managed(mode="fix-on-1")
    # The third append is build[1]'s finish: the build ran, its result does not reach disk.
    env = repo.env | {"HARNESS_FAILPOINT": "append_fsync:EIO@3"}
    failed = repo.harness("run", env=env, check=1)
    segment = repo.worktree / SEGMENT
    kept = [json.loads(text)["e"] for text in segment.read_bytes().splitlines()]
    assert [(e["seq"], e["type"]) for e in kept] == [(1, "goal.started"), (2, "step.started")]
    assert segment.read_bytes().endswith(b"\n")  # no trace: not even a torn tail to cut
    [line] = failed.stderr.splitlines()
    assert line.startswith("harness: g1: error: ") and line.endswith(
        f"{SEGMENT}: cannot write: Input/output error; the line was cut off again, "
        "the events before it are intact"
    ), line
    assert repo.verified().startswith("ok g1: 2 events, head 2:")
    repo.harness("run", check=0)
    events = repo.replayed()["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # The build is known to have been cut off: it runs again, on the worktree it left.
    assert [e["type"] for e in events[2:4]] == ["goal.resumed", "step.cutoff"]
    assert repo.status()["status"] == "completed"
    repo.verified()
