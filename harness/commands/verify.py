"""`harness verify`: chain, MACs, cell binding and approvals; names the first bad event."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from harness.commands.remote_goal import open_reading
from harness.commands.reviewer import remote_goal_branches
from harness.commands.session import nothing_notes
from harness.commands.verify_unverified import failed, verify_unverified
from harness.errors import HarnessError, TrustFailure
from harness.loop.control import Control
from harness.model.goalid import GOAL_ID_RE
from harness.record.hydrate import FETCH_ADVICE, SAFE_ADVICE, load
from harness.record.ledger import Record
from harness.record.locate import Located, locate
from harness.record.visible import line
from harness.store.gitrepo import Repo
from harness.store.objects import ObjectCheck, Unreadable, branches
from harness.store.recorded import recorded_goals
from harness.trust.approvals import find_run_approval
from harness.trust.redact import Redactor
from harness.trust.secret import Secret


def verify(
    cwd: Path,
    goal_ids: list[str],
    env: Mapping[str, str],
    out: TextIO,
    as_json: bool = False,
    err: TextIO = sys.stderr,
    secrets: bool = False,
) -> int:
    """`secrets`: also look in every event for a secret value of `env` (names that say
    secret, the config's `redact_env`) or a token shape, and fail a record that holds one."""
    with open_reading(cwd, env, goal_ids) as s:
        # Every goal: a goal file's, and every record's (branch, ledger folder, worktree,
        # this clone's marker); a goal never run is left out, one whose record is gone fails.
        ids = goal_ids or sorted(
            set(s.control.goal_ids()) | set(goals_with_records(s.repo, s.control))
        )
        if s.secret is None:  # a reviewer clone: what needs no secret (reviewer.py)
            remote = remote_goal_branches(s.repo, s.control.config.branch_prefix)
            ids = goal_ids or sorted(set(ids) | set(remote))
            results = [verify_unverified(s.repo, s.control, i, remote.get(i)) for i in ids]
        else:
            scan = Redactor.for_env(env, s.control.config.redacted()) if secrets else None
            results = [_result(s.repo, s.control, s.secret, goal_id, scan) for goal_id in ids]
        if not goal_ids:
            results = [r for r in results if not r.get("never_run")]
        notes = [] if goal_ids else nothing_notes(s.control, bool(results), "records")
    err.writelines(line(f"harness: note: {note}") for note in notes)
    worst = max((r.get("exit_code", 0) for r in results), default=0)
    if as_json:
        out.write(json.dumps({"ok": worst == 0, "goals": results}, indent=2) + "\n")
    else:
        out.writelines(line(_line(r)) for r in results)
    return int(worst)


def goals_with_records(repo: Repo, control: Control) -> list[str]:
    """Goals with a record here, or that had one: a goal branch (a broken one too), a
    `ledger/<id>` folder, a goal worktree, this clone's marker (`store/recorded.py`)."""
    prefix = control.config.branch_prefix
    heads, broken = branches(repo.root, prefix)
    ids = {b[len(prefix) :] for b in [*heads, *broken]}
    folder = repo.root / "ledger"
    ids |= {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
    worktrees = repo.worktree_path("")
    ids |= {p.name for p in worktrees.iterdir() if p.is_dir()} if worktrees.is_dir() else set()
    ids |= set(recorded_goals(repo))
    # Only goal ids name goals (a folder name may hold anything, a newline included).
    return sorted(i for i in ids if GOAL_ID_RE.fullmatch(i))


def _result(
    repo: Repo, control: Control, secret: Secret, goal_id: str, scan: Redactor | None = None
) -> dict[str, Any]:
    try:
        return _verify_one(repo, control, secret, goal_id, scan)
    except HarnessError as exc:
        return failed(goal_id, exc)


def _verify_one(
    repo: Repo, control: Control, secret: Secret, goal_id: str, scan: Redactor | None
) -> dict[str, Any]:
    branch = control.branch(goal_id)
    with locate(repo, goal_id, branch) as found:
        key = secret.goal_key(goal_id)
        objects = _object_check(repo, control, found, branch)
        try:
            # Every line's MAC, sequence and chain from the first; the state is folded on
            # from the MAC'd cell (a run folds the whole ledger and compares it with the cell).
            loaded = load(
                found.paths, key, found.committed, repair=False, report=False, full_fold=False
            )
            broken = objects.finish() if objects is not None else None
        finally:
            if objects is not None:
                objects.close()
        if broken is not None:
            raise TrustFailure(_unreadable_text(branch, broken, found.origin))
        segments = len(loaded.ledger.segments())
    cell = loaded.cell
    if cell.goal_sha256 is not None:
        source = f"goals/{goal_id}.approval"
        records = control.approvals(goal_id)
        find_run_approval(records, control.owners(), goal_id, cell.goal_sha256, source)
    notes = []
    if loaded.torn is not None:
        notes.append(
            f"torn last line of {loaded.torn.length} bytes (a crash mid-append; the next run cuts it)"
        )
    if loaded.rolled_forward:
        notes.append(
            f"{loaded.rolled_forward} event(s) after the cell "
            "(a crash before the cell write; the next run rolls forward)"
        )
    head = cell.position
    leaks = leaked(loaded.ledger.records(), scan) if scan is not None else []
    if leaks:
        shown = "; ".join(leaks[:20]) + (f"; … {len(leaks) - 20} more" if len(leaks) > 20 else "")
        message = (
            f"ledger/{goal_id}: the record holds {len(leaks)} secret(s): {shown}; {LEAK_ADVICE}"
        )
        failure = {"message": message, "secrets": leaks}
        return {"id": goal_id, "ok": False, "exit_code": 3, "failure": failure}
    return {
        "id": goal_id,
        "ok": True,
        "exit_code": 0,
        "events": loaded.events,
        "segments": segments,
        "head": {"seq": head.seq, "hash": head.hash},
        "status": cell.status,
        "notes": notes,
    }


LEAK_ADVICE = (
    "rotate each leaked secret now (it is in git history wherever the branch was pushed); "
    'docs/guide/threat-model.md, "After a leak", says what else to do'
)


def leaked(records: Iterable[Record], scan: Redactor) -> list[str]:
    """`<segment>:<line> (event <seq>) <receipt>` for each secret an event's text holds."""
    found = []
    for record in records:
        for text in _strings(record.event.data):
            for mark in scan.found(text):
                found.append(f"{record.segment}:{record.line} (event {record.event.seq}) {mark}")
    return list(dict.fromkeys(found))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _object_check(repo: Repo, control: Control, found: Located, branch: str) -> ObjectCheck | None:
    """Every commit, tree and blob the goal branch added, read while the ledger is checked:
    `ok` vouches only for a record git can hand on (a fetch, a push, the next run)."""
    if found.committed is None:
        return None  # not a commit at all (a copied ledger folder outside git)
    root = found.paths.root if found.origin == "worktree" else repo.root
    head = f"refs/heads/{branch}" if found.origin == "branch" else "HEAD"
    return ObjectCheck(root, head, [control.commit], "ledger/")


def _unreadable_text(branch: str, broken: Unreadable, origin: str) -> str:
    what = f"at {broken.path}" if broken.path else "a commit or tree"
    advice = SAFE_ADVICE if origin == "worktree" else FETCH_ADVICE
    return f"{branch}: git object {broken.oid} ({what}) cannot be read: {broken.reason}; {advice}"


def _line(result: Mapping[str, Any]) -> str:
    if not result["ok"]:
        return f"FAIL {result['id']}: {result['failure']['message']}"
    head = result["head"]
    extra = "; " + "; ".join(result["notes"]) if result["notes"] else ""
    if "runner" in result:
        runner = result["runner"]
        who = ", ".join(runner["principals"])
        extra += f" (verified by runner {who} ({runner['fingerprint']}); {result['unverified']})"
    elif not result.get("verified", True):
        extra += f" (unverified: {result['unverified']})"
    return (
        f"ok {result['id']}: {result['events']} events, head {head['seq']}:{head['hash'][:16]}, "
        f"status {result['status']}{extra}"
    )
