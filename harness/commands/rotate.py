"""`harness rotate-owners <id> --key K`: sign the change of owners for a started goal.

A started goal is pinned to the owners file it started under. The statement signed here is
the one `docs/guide/approvals.md` shows for ssh-keygen: `decision rotate-owners <sha256 of
the new .harness/owners>` with the goal's pinned SHA-256 and no binding lines. The key must
be one of the pinned owners'; the new file is the checkout's (so a key replacement can be
one commit), hashed as git stores it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.approve import passphrase
from harness.commands.decide import act_now, current_cell
from harness.commands.session import open_session
from harness.errors import InvalidInput, TrustFailure
from harness.loop.control import OWNERS_PATH
from harness.record.events import TERMINAL, WAITING
from harness.record.visible import line
from harness.store.gitrepo import stored_bytes
from harness.trust.approvals import append_record, load_approval_file
from harness.trust.owners import principals_for_key
from harness.trust.sshsig import sign, verify
from harness.trust.statement import Statement


def rotate_owners(cwd: Path, goal_id: str, key: Path, env: Mapping[str, str], out: TextIO) -> int:
    with open_session(cwd, env, [goal_id], need_secret=False) as session:
        repo, control, secret = session.repo, session.control, session.secret
        cell = current_cell(repo, control, goal_id, secret)
        if cell.goal_sha256 is None:
            raise InvalidInput(
                f"goal {goal_id}: has not started, so it follows {OWNERS_PATH} as it is"
                " (nothing to rotate)"
            )
        if cell.status in TERMINAL:
            raise InvalidInput(f"goal {goal_id}: is {cell.status} (nothing to rotate)")
        path = repo.root / OWNERS_PATH
        if not path.is_file():
            raise InvalidInput(f"{OWNERS_PATH}: missing in the checkout (expected the new file)")
        new_sha = hashlib.sha256(
            stored_bytes(repo.root, OWNERS_PATH, path.read_bytes())
        ).hexdigest()
        if new_sha == cell.owners_sha256:
            raise InvalidInput(
                f"goal {goal_id}: {OWNERS_PATH} is the file the goal is pinned to"
                " (nothing to rotate: change the file first)"
            )
        statement = Statement(goal_id, cell.goal_sha256, f"rotate-owners {new_sha}")
        armored = sign(statement.to_bytes(), key, passphrase(env))
        pinned = control.owners_at(cell.owners_commit, cell.owners_sha256)
        signers = principals_for_key(pinned, verify(statement.to_bytes(), armored))
        if not signers:
            raise TrustFailure(
                f"{key}: this key is not one of the owners goal {goal_id} started under"
                f" ({OWNERS_PATH} at commit {cell.owners_commit}); only such a key can sign"
                " the change (nothing was written)"
            )
        approval = repo.root / "goals" / f"{goal_id}.approval"
        append_record(approval, statement, armored)
        stale = (
            f"; a decision for gate {cell.gate} signed before the rotation names an earlier"
            " ledger head: sign it again after the rotation"
            if cell.status in WAITING
            else ""
        )
        out.write(
            line(
                f"signed `rotate-owners {new_sha[:12]}` for {goal_id} as {', '.join(signers)}{stale}"
            )
        )
        on_control = new_sha == control.owners_sha256
        if secret is None or not on_control or not (repo.worktree_path(goal_id) / ".git").exists():
            out.write(
                line(
                    f"next: commit {OWNERS_PATH} and goals/{goal_id}.approval; the next"
                    " `harness run` records the rotation"
                )
            )
            return 0
        record = load_approval_file(approval, str(approval))[-1]
        return act_now(repo, control, secret, goal_id, record, env, out)
