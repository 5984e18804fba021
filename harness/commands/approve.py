"""`harness approve <id> --key K`: sign the run decision for the goal file's current bytes."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from harness.commands.check import stored_goal_bytes, working_config, working_owners
from harness.errors import InvalidInput, TrustFailure
from harness.model.goal import parse_goal
from harness.model.goalid import check_goal_id
from harness.record.visible import line
from harness.store.gitrepo import Repo
from harness.trust.approvals import append_record, load_approval_file, verify_record
from harness.trust.owners import Owner, principals_for_key
from harness.trust.sshsig import Passphrase, sign, verify
from harness.trust.statement import Statement

PASSPHRASE_ENV = "HARNESS_KEY_PASSPHRASE"


def passphrase(env: Mapping[str, str]) -> Passphrase:
    """HARNESS_KEY_PASSPHRASE if set; else, when standing at a terminal, a prompt there
    (asked only if the key is encrypted); else none."""
    value = env.get(PASSPHRASE_ENV)
    if value:
        return value.encode()
    return _ask if sys.stdin.isatty() else None


def _ask() -> bytes | None:
    import getpass

    try:
        typed = getpass.getpass("passphrase for the private key: ")
    except (EOFError, KeyboardInterrupt):
        return None
    return typed.encode() if typed else None


def approve(
    cwd: Path,
    goal_id: str,
    key: Path,
    env: Mapping[str, str],
    out: TextIO,
    push: str | None = None,
) -> int:
    """Append the owner's run approval of the goal file's bytes (nothing when that owner has
    approved these bytes already); with `push`, commit both files and push the branch."""
    check_goal_id(goal_id, "goal id")
    repo = Repo.discover(cwd)
    root = repo.root
    if push is not None and not repo.checked_out_ref().startswith("refs/heads/"):
        raise InvalidInput(
            f"--push: no branch is checked out in {root} (expected the control branch, so "
            "the approval can be committed on it)"
        )
    owners = working_owners(root)
    path = root / "goals" / f"{goal_id}.yaml"
    if not path.is_file():
        raise InvalidInput(
            f"goals/{goal_id}.yaml: no such goal file (expected one made by `harness new {goal_id}`)"
        )
    notes: list[str] = []
    data = stored_goal_bytes(root, goal_id, notes)
    principals = {p for o in owners for p in o.principals}
    parse_goal(data, f"goals/{goal_id}.yaml", goal_id, working_config(root).defaults, principals)
    statement = Statement(goal=goal_id, sha256=hashlib.sha256(data).hexdigest(), decision="run")
    armored = sign(statement.to_bytes(), key, passphrase(env))
    signer = principals_for_key(owners, verify(statement.to_bytes(), armored))
    if not signer:
        raise InvalidInput(
            f"{key}: this key is not listed in .harness/owners (expected an owner's ssh-ed25519 key)"
        )
    approval = root / "goals" / f"{goal_id}.approval"
    already = _already_approved(approval, statement, signer, owners)
    if not already:
        append_record(approval, statement, armored)
    out.writelines(line(f"note: {note}") for note in notes)
    done = "already approved" if already else "approved"
    who = ", ".join(signer)
    kept = " (nothing written)" if already else ""
    out.write(line(f"{done} goals/{goal_id}.yaml (sha256 {statement.sha256[:12]}) as {who}{kept}"))
    if push is not None:
        from harness.store.controlref import commit_and_push

        message = f"harness: approve {goal_id}"
        ref = repo.checked_out_ref()
        commit = commit_and_push(repo, push, ref, approval, message, also=[path])
        branch = ref.removeprefix("refs/heads/")
        out.write(
            line(
                f"committed goals/{goal_id}.yaml and goals/{goal_id}.approval ({commit[:12]}) "
                f"and pushed {branch} to {push}; the next `harness run` there runs it"
            )
        )
        return 0
    out.write(
        line(
            f"next: git add goals/{goal_id}.yaml goals/{goal_id}.approval"
            f" && git commit -m 'approve {goal_id}' (or `--push REMOTE` to commit and push)"
        )
    )
    return 0


def _already_approved(
    approval: Path, statement: Statement, signer: tuple[str, ...], owners: Sequence[Owner]
) -> bool:
    """Whether the file already holds this statement signed by the same owner: a second
    `approve` of the same bytes adds nothing (a different owner's signature is added)."""
    for record in load_approval_file(approval, f"goals/{statement.goal}.approval"):
        if record.statement != statement:
            continue
        try:
            if verify_record(record, owners, "").principals == signer:
                return True
        except TrustFailure:
            continue
    return False
