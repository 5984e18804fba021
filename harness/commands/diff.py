"""`harness diff`: the goal's code change, without `ledger/`, exactly as git prints it.

`harness diff g` is `git diff <base> <gate commit> -- . ':!ledger'`; `--iteration N` is what
build N changed; `--stat` is git's `--stat`, then a line per step with an allowlist saying
what it reached (sandbox.md, "Egress by name"); `--json` names the commits, each file's line
counts and the patch, for tools. The commits come from the verified ledger (record/changes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from harness.commands.remote_goal import goal_ledger, open_reading
from harness.commands.reviewer import check_signed_tree
from harness.errors import InvalidInput
from harness.record.changes import Changes, goal_changes
from harness.record.egress import stat_lines
from harness.record.unverified import UnverifiedLedger
from harness.store.gitenv import git_reason
from harness.store.gitrepo import Repo, run_git

# Everything but the harness's own record: what a reviewer and a pull request should see.
PATHSPEC = ("--", ".", ":!ledger")


def diff(
    cwd: Path,
    goal_id: str,
    iteration: int | None,
    stat: bool,
    as_json: bool,
    env: Mapping[str, str],
    out: BinaryIO,
    err: TextIO = sys.stderr,
) -> int:
    with open_reading(cwd, env, [goal_id]) as s:
        with goal_ledger(s, goal_id, err) as (ledger, remote_ref):
            changes = goal_changes(ledger.records(), goal_id)
            reached = stat_lines(ledger.records(), iteration) if stat and not as_json else []
        branch_head = s.repo.rev_parse(f"refs/heads/{s.control.branch(goal_id)}")
        head = branch_head or (s.repo.rev_parse(remote_ref) if remote_ref else None)
        if isinstance(ledger, UnverifiedLedger) and ledger.tree and head is not None:
            branch = s.control.branch(goal_id)
            check_signed_tree(s.repo.root, head, branch, ledger.tree, ledger.signer)
        old, new = commits(changes, goal_id, iteration, head)
        repo = s.repo
        _have(repo, goal_id, old, new)
        if as_json:
            out.write(_json(repo, goal_id, iteration, old, new))
        else:
            out.write(_git_diff(repo, ["--stat"] if stat else [], old, new))
            out.write("".join(reached).encode())
    return 0


def commits(
    changes: Changes, goal_id: str, iteration: int | None, head: str | None
) -> tuple[str, str]:
    """The two commits to compare: base and target, or build N's start and end."""
    if iteration is None:
        target = changes.target(head)
        if changes.base is None or target is None:
            raise InvalidInput(f"goal {goal_id}: has not started (no change to show)")
        return changes.base, target
    if iteration not in changes.builds:
        known = ", ".join(str(n) for n in sorted(changes.builds)) or "none yet"
        raise InvalidInput(
            f"--iteration: goal {goal_id} has no build {iteration} (expected one of: {known})"
        )
    start, end = changes.builds[iteration]
    end = end or head
    if end is None:
        raise InvalidInput(f"goal {goal_id}: build {iteration} is the last and no branch holds it")
    return start, end


def _have(repo: Repo, goal_id: str, *shas: str) -> None:
    for sha in shas:
        if repo.rev_parse(sha) is None:
            raise InvalidInput(
                f"goal {goal_id}: commit {sha} is not in this repository "
                "(expected the goal branch fetched from the clone that ran it)"
            )


def _git_diff(repo: Repo, options: list[str], old: str, new: str) -> bytes:
    proc = run_git(["diff", *options, old, new, *PATHSPEC], repo.root, check=False)
    if proc.returncode != 0:
        raise InvalidInput(f"git diff {old} {new}: {git_reason(proc.stderr)}")
    return proc.stdout


def _json(repo: Repo, goal_id: str, iteration: int | None, old: str, new: str) -> bytes:
    numstat = _git_diff(repo, ["--numstat", "-z", "--no-renames"], old, new)
    files: list[dict[str, Any]] = []
    for entry in numstat.decode("utf-8", "replace").split("\0"):
        if not entry:
            continue
        added, deleted, path = entry.split("\t", 2)
        binary = added == "-"
        files.append(
            {
                "path": path,
                "added": None if binary else int(added),
                "deleted": None if binary else int(deleted),
                "binary": binary,
            }
        )
    document = {
        "goal": goal_id,
        "iteration": iteration,
        "from": old,
        "to": new,
        "files": files,
        "patch": _git_diff(repo, [], old, new).decode("utf-8", "replace"),
    }
    return json.dumps(document, indent=2, sort_keys=True).encode() + b"\n"
