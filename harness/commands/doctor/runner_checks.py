"""Doctor's checks of the runners: `.harness/runners` and this machine's runner key."""

from __future__ import annotations

from collections.abc import Mapping

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.errors import HarnessError, TrustFailure
from harness.loop.control import Control, open_control
from harness.store.gitrepo import Repo
from harness.trust.runnerkey import load_runner_key, runner_key_file
from harness.trust.runners import RUNNERS_PATH, SIGN_HINT

LIST_ADVICE = (
    f"on each runner `harness runner-key new`; an owner adds the lines it prints to "
    f"{RUNNERS_PATH}, runs {SIGN_HINT} and commits both files"
)


def runner_checks(repo: Repo, env: Mapping[str, str], reviewed: list[str]) -> list[Finding]:
    try:
        control = open_control(repo)
    except HarnessError:
        return []  # the repository check has said why
    try:
        runners = control.runners()
    except TrustFailure as exc:
        return [fail("runners", str(exc), f"an owner runs {SIGN_HINT} and commits", trust=True)]
    if runners is None:
        found = Finding(
            "runners",
            WARN,
            f"none listed ({RUNNERS_PATH} is not on {control.ref}): a clone without the "
            "secret cannot tell a runner's record from a forgery",
            LIST_ADVICE,
        )
    else:
        names = ", ".join(p for runner in runners for p in runner.principals)
        found = Finding("runners", OK, f"{len(runners)} listed, signed by an owner: {names}")
    return [found, _key_check(control, env, bool(reviewed))]


def _key_check(control: Control, env: Mapping[str, str], reviewer: bool) -> Finding:
    try:
        key = load_runner_key(env)
    except TrustFailure as exc:
        return fail("runner-key", str(exc), "`harness runner-key new`, or unset it", trust=True)
    runners = control.runners()
    if key is None:
        if runners is None or reviewer:
            why = "a reviewer clone needs none" if reviewer else "no runners listed"
            return Finding("runner-key", OK, f"none at {runner_key_file(env)} ({why})")
        return fail(
            "runner-key",
            f"none at {runner_key_file(env)}, and {RUNNERS_PATH} lists the runners: "
            "`harness run` refuses here",
            LIST_ADVICE,
            trust=True,
        )
    names = [p for r in runners or () for p in r.principals if r.key_blob == key.public_blob]
    if runners is not None and not names:
        return fail(
            "runner-key",
            f"{key.fingerprint} ({key.path}) is not in {RUNNERS_PATH}: `harness run` refuses here",
            f"an owner adds `runner@host {key.public_line}` to {RUNNERS_PATH}, runs "
            f"{SIGN_HINT} and commits",
            trust=True,
        )
    listed = f", listed as {', '.join(names)}" if names else ""
    return Finding("runner-key", OK, f"{key.fingerprint} ({key.path}) signs checkpoints{listed}")
