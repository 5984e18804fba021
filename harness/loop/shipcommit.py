"""`HARNESS_SHIP_COMMIT`: the goal's code change alone, as one commit on the goal's base.

The goal branch carries `ledger/<id>/` and a harness commit per step; a pull request wants
neither. The ship step gets a commit made from the record alone, so every machine that
holds the goal branch makes the same commit id (docs/specs/loop.md, "The ship commit"):

- tree: the signed gate commit's tree with its top-level `ledger/` as the base has it (none
  when the base has none), so the commit holds the reviewed change and nothing else;
- parent: the base, the control commit the goal branch was made at (`control_commit` of
  the first `goal.started`: `harness.record.changes.base_after`);
- message: the objective's first line, the rest of the objective, then the trailers
  `Harness-Goal: <id>` and `Harness-Ledger: <seq>:<hash>`, the ledger head of the done
  gate that parked the goal at `ship` (what the first ship decision bound);
- author and committer: the harness, dated with the committer date of that gate's commit.

A retry after `ship_failed` makes the same commit again (same tree, base and done gate), so a
push of it that already happened is a no-op and never a rewrite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.record.changes import base_after
from harness.record.ledger import Record
from harness.record.position import Position
from harness.store.gitenv import step_git_env
from harness.store.gitrepo import HARNESS_EMAIL, HARNESS_NAME, run_git

# Settings that would change the bytes of the commit object (and so its id) or sign it.
_FIXED = (
    "-c",
    "i18n.commitEncoding=UTF-8",
    "-c",
    "commit.gpgSign=false",
)


@dataclass(frozen=True)
class ShipSource:
    """What the ship commit is made from, read from the ledger."""

    base: str  # the control commit the goal branch was made at
    gate_commit: str  # the commit the done gate parked at (its date dates the ship commit)
    ledger: str  # the ledger head right after that gate: `seq:hash`


def ship_source(records: Iterable[Record]) -> ShipSource | None:
    """The base and the last done gate at `ship`; None when the ledger has neither. The
    base of a recurring goal's run N ≥ 2 is the control commit its `run.started` names."""
    base: str | None = None
    gate: tuple[str, str] | None = None
    for record in records:
        event = record.event
        base = base_after(base, event)
        if event.type == "run.started":
            gate = None  # a new run: its own done gate, on its own base
        elif event.type == "goal.gated" and event.data.get("reason") == "ship":
            gate = (event.data["commit"], str(Position(event.seq, record.hash)))
    if base is None or gate is None:
        return None
    return ShipSource(base, gate[0], gate[1])


def ship_message(goal_id: str, objective: str, ledger: str) -> bytes:
    """The objective as a commit message (first line the subject), then the trailers."""
    lines = [line.rstrip() for line in objective.strip().splitlines()]
    subject, body = (lines[0] if lines else goal_id), "\n".join(lines[1:]).strip()
    text = subject + "\n\n" + (body + "\n\n" if body else "")
    return (text + f"Harness-Goal: {goal_id}\nHarness-Ledger: {ledger}\n").encode()


def make_ship_commit(
    git_dir: Path, goal_id: str, objective: str, source: ShipSource, signed: str
) -> str:
    """Write the ship commit for the signed commit `signed` into the repository; its id."""
    tree = _tree_with_base_ledger(git_dir, signed, source.base)
    date = run_git(["log", "-1", "--format=%cd", "--date=raw", source.gate_commit], git_dir)
    when = date.stdout.decode().strip()
    env = {
        "GIT_AUTHOR_NAME": HARNESS_NAME,
        "GIT_AUTHOR_EMAIL": HARNESS_EMAIL,
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_NAME": HARNESS_NAME,
        "GIT_COMMITTER_EMAIL": HARNESS_EMAIL,
        "GIT_COMMITTER_DATE": when,
    }
    made = run_git(
        [*_FIXED, "commit-tree", tree, "-p", source.base],
        git_dir,
        input=ship_message(goal_id, objective, source.ledger),
        extra_env=env,
    )
    return made.stdout.decode().strip()


def ship_env(
    records: Iterable[Record], git_dir: Path, goal_id: str, objective: str, signed: str
) -> dict[str, str]:
    """The ship step's own variables: the goal's change as one commit on its base, the
    base, and the signed commit the checkout holds. Its git obeys no hook, replace ref or
    home's configuration (`gitenv.step_git_env`)."""
    source = ship_source(records)
    if source is None:  # no done gate at ship in the record: nothing to make it from
        return {"HARNESS_GATE_COMMIT": signed} | step_git_env()
    made = make_ship_commit(git_dir, goal_id, objective, source, signed)
    return {
        "HARNESS_SHIP_COMMIT": made,
        "HARNESS_SHIP_BASE": source.base,
        "HARNESS_GATE_COMMIT": signed,
    } | step_git_env()


def _tree_with_base_ledger(git_dir: Path, commit: str, base: str) -> str:
    """The signed commit's tree with its top-level `ledger` as the base has it (or none when
    the base has none): `git diff <base> <ship commit>` is then exactly the reviewed change,
    `harness diff`'s `git diff <base> <gate> -- . ':!ledger'`, and nothing of the base's own
    `ledger/` (a `.gitkeep` from `harness init`) is deleted by it."""

    def entries(rev: str) -> list[bytes]:
        return [e for e in run_git(["ls-tree", "-z", rev], git_dir).stdout.split(b"\0") if e]

    kept = [e for e in entries(commit) if not e.endswith(b"\tledger")]
    kept += [e for e in entries(base) if e.endswith(b"\tledger")]
    made = run_git(["mktree", "-z"], git_dir, input=b"".join(e + b"\0" for e in kept))
    return made.stdout.decode().strip()


def unfaithful_refusal(checkout: Path, records: Iterable[Record]) -> str | None:
    """Why the ship step must not start in `checkout`: files whose checked-out bytes are not
    the blobs the owner reviewed (`store/faithful.py`). None when every byte is as stored."""
    from harness.store.faithful import unfaithful_files

    source = ship_source(records)
    differ = unfaithful_files(checkout, source.base if source else None)
    if not differ:
        return None
    return (
        "harness: the ship step did not start: the checkout of the signed commit differs from"
        f" its committed bytes in {', '.join(differ[:20])} (a .gitattributes filter, encoding"
        " or end-of-line rule turns what was reviewed into something else); remove the rule"
        " or commit the files as they check out, then approve the change again"
    )
