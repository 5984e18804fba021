"""`harness approve <id> --key K`: sign the run decision for the goal file's current bytes."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.check import stored_goal_bytes, working_config, working_owners
from harness.errors import InvalidInput
from harness.model.goal import parse_goal
from harness.model.goalid import check_goal_id
from harness.record.visible import line
from harness.store.gitrepo import Repo
from harness.trust.approvals import append_record
from harness.trust.owners import principals_for_key
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


def approve(cwd: Path, goal_id: str, key: Path, env: Mapping[str, str], out: TextIO) -> int:
    check_goal_id(goal_id, "goal id")
    root = Repo.discover(cwd).root
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
    append_record(root / "goals" / f"{goal_id}.approval", statement, armored)
    out.writelines(line(f"note: {note}") for note in notes)
    out.write(
        line(
            f"approved goals/{goal_id}.yaml (sha256 {statement.sha256[:12]}) as {', '.join(signer)}"
        )
    )
    out.write(
        line(
            f"next: git add goals/{goal_id}.yaml goals/{goal_id}.approval"
            f" && git commit -m 'approve {goal_id}'"
        )
    )
    return 0
