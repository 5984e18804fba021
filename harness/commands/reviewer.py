"""A reviewer clone: a clone without the secret, holding records a runner made with its own.

Every read-only command works there, unverified: the hash chain, the approvals and the
decisions need no secret, the MACs do (trust.md, "A reviewer clone"). Nothing may advise
making a secret in such a clone: a new secret is not the runner's, so every record would
then fail its MAC check here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.errors import HarnessError, TrustFailure
from harness.loop.control import Control, open_control
from harness.model.goalid import GOAL_ID_RE
from harness.record.hydrate import GoalPaths
from harness.record.position import Position
from harness.store.catfile import tree_without_entry
from harness.store.gitrepo import Repo, run_git
from harness.store.objects import ObjectReader, branch_heads
from harness.trust.checkpoint import Vouched, vouch
from harness.trust.secret import ENV_SECRET, ENV_SECRET_FILE, default_secret_file

COPY_ADVICE = (
    f"to run goals here, copy the runner's secret to this machine ({ENV_SECRET_FILE}=<file>, "
    f"or {ENV_SECRET} in CI); a new secret would not be the runner's, and every record "
    "would fail its check here"
)


def secret_here(env: Mapping[str, str]) -> bool:
    """Whether this machine is set up with a secret at all (HARNESS_SECRET, the file named
    by HARNESS_SECRET_FILE, or the default file). Without one, the read-only commands read
    the record unverified; a secret that is there but wrong is still exit 3."""
    if env.get(ENV_SECRET) or env.get(ENV_SECRET_FILE):
        return True
    return default_secret_file(env).exists()


def remote_goal_branches(repo: Repo, prefix: str) -> dict[str, str]:
    """Goal id -> remote-tracking ref, for goal branches this clone has only as a remote's
    (one remote each; a name two remotes hold is left out)."""
    out = run_git(
        ["for-each-ref", "--format=%(refname)", f"refs/remotes/*/{prefix}*"], repo.root
    ).stdout.decode()
    seen: dict[str, list[str]] = {}
    for ref in out.splitlines():
        _, _, rest = ref.removeprefix("refs/remotes/").partition("/")
        if rest.startswith(prefix) and "/" not in rest[len(prefix) :]:
            seen.setdefault(rest[len(prefix) :], []).append(ref)
    return {goal: refs[0] for goal, refs in seen.items() if len(refs) == 1}


def recorded_goals(repo: Repo) -> list[str]:
    """The goals this clone holds a record of: a goal branch of its own or a remote's, or a
    committed ledger folder. [] where the repository is not managed or cannot be read."""
    try:
        control = open_control(repo)
        prefix = control.config.branch_prefix
        control.objects.close()
        ids = {b[len(prefix) :] for b in branch_heads(repo.root, prefix)}
        ids |= set(remote_goal_branches(repo, prefix))
    except HarnessError:
        return []
    folder = repo.root / "ledger"
    ids |= {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
    return sorted(i for i in ids if GOAL_ID_RE.fullmatch(i))


def reviewer_refusal(repo: Repo, env: Mapping[str, str], what: str) -> TrustFailure | None:
    """The refusal of `what` (a command that needs the secret) in a reviewer clone, or None
    where this is not one (a secret is set up, or no goal has a record here yet)."""
    if secret_here(env):
        return None
    goals = recorded_goals(repo)
    if not goals:
        return None
    shown = ", ".join(goals[:5]) + (f" and {len(goals) - 5} more" if len(goals) > 5 else "")
    return TrustFailure(
        f"no secret: {default_secret_file(env)} does not exist, and {what} needs it: this is "
        f"a reviewer clone (records "
        f"of {shown} were made by a runner with its own secret; status, replay, report, diff "
        f"and verify work here, unverified); {COPY_ADVICE}"
    )


NO_RUNNERS = 'no .harness/runners: checkpoints are not signed (trust.md, "Runner keys")'


def vouch_record(
    control: Control, paths: GoalPaths, head: Position | None = None, cell: bytes | None = None
) -> Vouched | None:
    """Where the secret is not: the listed runner who signed this goal's record (its cell,
    read here unless the caller has its bytes, and `head`, the ledger's last line as read),
    or None where the owners list no runners. A record that no listed runner signed is
    refused (exit 3): forged, or edited since."""
    runners = control.runners()
    if runners is None:
        return None
    source = f"{paths.rel}/state.json"
    try:
        cell = paths.cell.read_bytes() if cell is None else cell
    except FileNotFoundError:
        raise TrustFailure(
            f"{source}: missing (expected the goal's cell beside its ledger)"
        ) from None
    try:
        signature: bytes | None = paths.checkpoint.read_bytes()
    except FileNotFoundError:
        signature = None
    return vouch(paths.goal_id, cell, signature, runners, head)


def check_signed_tree(root: Path, ref: str, branch: str, tree: str, signed: str) -> None:
    """The commit `ref` holds the work (its tree without ledger/) a runner signed with the
    record (`signed`: `verified by runner …`): a commit pushed over the runner's with other
    code in it is refused (exit 3), whoever can push to the goal branch."""
    reader = ObjectReader(root)
    try:
        hashed = tree_without_entry(reader, f"{ref}^{{tree}}", "ledger")
    finally:
        reader.close()
    if hashed is None or hashed[0] != tree:
        found = hashed[0][:12] if hashed is not None else "unreadable"
        raise TrustFailure(
            f"{branch}: its work tree ({found}) is not the tree {tree[:12]} signed with the "
            f"record ({signed}): a commit was pushed over the runner's"
        )
