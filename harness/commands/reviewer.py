"""A reviewer clone: a clone without the secret, holding records a runner made with its own.

Every read-only command works there, unverified: the hash chain, the approvals and the
decisions need no secret, the MACs do (trust.md, "A reviewer clone"). Nothing may advise
making a secret in such a clone: a new secret is not the runner's, so every record would
then fail its MAC check here.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.errors import HarnessError, TrustFailure
from harness.loop.control import open_control
from harness.model.goalid import GOAL_ID_RE
from harness.store.gitrepo import Repo, run_git
from harness.store.objects import branch_heads
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
