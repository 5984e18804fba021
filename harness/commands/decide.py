"""`harness ship` and `harness unpark`: sign a decision bound to the goal's exact state.

The decision names the goal file's SHA-256, the commit the gate was reached at and the
ledger head. It is appended to `goals/<id>.approval` in the checkout; a runner honours it
once the file reaches the control branch. With the secret at hand, the command also acts
at once on this machine's worktree.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.commands.approve import passphrase
from harness.commands.remote_goal import (
    UNVERIFIED,
    commit_decision,
    goal_ref,
    require_control_checked_out,
)
from harness.commands.session import Session, open_session
from harness.errors import InvalidInput, TrustFailure
from harness.loop.clock import SystemClock
from harness.loop.context import Pending, RunContext
from harness.loop.control import OWNERS_PATH, Control
from harness.record.cell import Cell, parse_cell, peek_cell
from harness.record.events import WAITING
from harness.record.visible import line, lines
from harness.store.gitrepo import Repo
from harness.store.lock import GoalLock
from harness.store.remote import runner_id
from harness.trust.approvals import (
    SignedRecord,
    append_record,
    find_run_approval,
    load_approval_file,
)
from harness.trust.checkpoint import FILE_NAME as CHECKPOINT_FILE
from harness.trust.checkpoint import vouch
from harness.trust.decisions import (
    BUDGET_GATES,
    EXTENDABLE_GATES,
    REVISION_ONLY_GATES,
    SHIP_GATES,
    SHIP_ONLY_GATES,
    parse_extension,
)
from harness.trust.owners import principals_for_key
from harness.trust.secret import Secret
from harness.trust.sshsig import load_private_key, sign_with, verify
from harness.trust.statement import Statement

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from harness.loop.notify import Seen

# `harness ship` acted at once and the ship step failed: the goal waits at ship_failed.
SHIP_FAILED_EXIT = 5


def ship(
    cwd: Path,
    goal_id: str,
    key: Path,
    env: Mapping[str, str],
    out: TextIO,
    push: str | None = None,
) -> int:
    return _decide(cwd, goal_id, key, None, env, out, ship=True, push=push)


def unpark(
    cwd: Path,
    goal_id: str,
    key: Path,
    extend: str | None,
    env: Mapping[str, str],
    out: TextIO,
    push: str | None = None,
) -> int:
    return _decide(cwd, goal_id, key, extend, env, out, ship=False, push=push)


def _decide(
    cwd: Path,
    goal_id: str,
    key: Path,
    extend: str | None,
    env: Mapping[str, str],
    out: TextIO,
    *,
    ship: bool,
    push: str | None = None,
) -> int:
    SystemClock(env)  # a malformed HARNESS_NOW is refused before anything is signed
    with open_session(cwd, env, [goal_id], need_secret=False) as session:
        if push is None or not _follow_control(session, push):
            return _sign_decision(session, goal_id, key, extend, env, out, ship=ship, push=push)
    with open_session(cwd, env, [goal_id], need_secret=False) as session:  # it moved: again
        return _sign_decision(session, goal_id, key, extend, env, out, ship=ship, push=push)


def _follow_control(session: Session[Secret | None], push: str) -> bool:
    """`--push REMOTE`: sign on top of the remote's control branch (remote.md)."""
    from harness.store.controlref import follow_control
    from harness.store.remote import Remote

    Remote.check(session.repo, push)
    require_control_checked_out(session.repo, session.control)
    return follow_control(session.repo, push, session.control.ref)


def _sign_decision(
    session: Session[Secret | None],
    goal_id: str,
    key: Path,
    extend: str | None,
    env: Mapping[str, str],
    out: TextIO,
    *,
    ship: bool,
    push: str | None = None,
) -> int:
    repo, control, secret = session.repo, session.control, session.secret
    cell = current_cell(repo, control, goal_id, secret, push)
    refuse_if_owners_moved(control, cell, goal_id)
    decision = _decision_for(cell, goal_id, extend, ship=ship)
    refuse_if_goal_changed(control, cell, goal_id)
    statement = Statement(
        goal=goal_id,
        sha256=cell.goal_sha256 or "",
        decision=decision,
        commit=cell.gate_commit,
        ledger=str(cell.position),
    )
    private = load_private_key(key, passphrase(env))
    armored = sign_with(private, statement.to_bytes())
    signers = principals_for_key(control.owners(), verify(statement.to_bytes(), armored))
    if not signers:
        raise TrustFailure(
            f"{key}: this key is not listed in .harness/owners on {control.ref}; "
            "only an owner can sign a decision (nothing was written)"
        )
    envelope = _ship_envelope(statement, private, out) if ship else None
    path = repo.root / "goals" / f"{goal_id}.approval"
    append_record(path, statement, armored)
    also = []
    if envelope is not None:
        from harness.trust.shipenvelope import append_envelope, envelope_path

        also.append(repo.root / envelope_path(goal_id))
        append_envelope(also[0], envelope)
    unverified = "" if secret is not None else f" (state read unverified: {UNVERIFIED})"
    out.write(
        line(
            f"signed `{decision}` for {goal_id} at commit {cell.gate_commit}, "
            f"ledger {cell.position.seq} as {', '.join(signers)}{unverified}"
        )
    )
    if push is not None:  # the runner that follows the remote acts on it, not this clone
        commit_decision(repo, control, push, path, goal_id, decision, out, also)
        return 0
    if secret is None or not (repo.worktree_path(goal_id) / ".git").exists():
        files = " and ".join(str(p.relative_to(repo.root)) for p in [path, *also])
        out.write(line(f"next: commit {files}; the next `harness run` acts on it"))
        return 0
    record = load_approval_file(path, str(path))[-1]
    return act_now(repo, control, secret, goal_id, record, env, out, envelope)


def _ship_envelope(statement: Statement, private: Ed25519PrivateKey, out: TextIO) -> bytes | None:
    """The ship decision as a DSSE envelope signed with the same key, for the runner's
    attestation bundle (attest.md); without the attest extra, none, and a line says so."""
    from harness.trust.intoto import AttestUnavailable, require_attest
    from harness.trust.shipenvelope import sign_decision

    try:
        require_attest()
    except AttestUnavailable as exc:
        out.write(line(f"note: no attestation envelope of this decision: {exc.message}"))
        return None
    return sign_decision(statement, private)


def act_now(
    repo: Repo,
    control: Control,
    secret: Secret,
    goal_id: str,
    record: SignedRecord,
    env: Mapping[str, str],
    out: TextIO,
    envelope: bytes | None = None,
) -> int:
    """`envelope`: the decision's DSSE envelope, for the ship step's attestation."""
    from harness.loop.advance import advance_goal
    from harness.loop.otel import live_trace

    def print_line(text: str) -> None:  # an event line, made by render.text_line
        out.write(text)
        out.flush()

    trace = live_trace(env, sys.stderr)  # the steps it runs are exported as `run`'s are
    pending = Pending((record,), envelope or b"")
    clock = SystemClock(env)
    ctx = RunContext(
        control,
        secret,
        clock,
        print_line,
        env,
        runner=runner_id(repo),
        trace=trace,
        pending=pending,
    )
    try:
        with GoalLock(repo.harness_dir() / "locks", goal_id):
            before = _seen(repo, control, goal_id)
            cell = advance_goal(repo, ctx, goal_id, extra=(record,))
            _tell(repo, control, goal_id, before, cell, env)
    finally:
        if trace is not None:
            trace.close()
    if record.statement.decision == "ship" and cell.gate == "ship_failed":
        # The detail ends with the step's own output, lines of it: each one continued.
        out.write(lines(f"the ship step failed: {cell.gate_detail or ''}"))
        out.write(line(f"next: fix the cause, then `harness ship {goal_id} --key …` runs it again"))
        return SHIP_FAILED_EXIT
    return 0


def _seen(repo: Repo, control: Control, goal_id: str) -> Seen | None:
    if control.config.notify is None:
        return None
    from harness.loop.notify import seen_before

    return seen_before(repo, control.branch(goal_id), goal_id, None)


def _tell(
    repo: Repo,
    control: Control,
    goal_id: str,
    before: Seen | None,
    cell: Cell,
    env: Mapping[str, str],
) -> None:
    """The decision moved the goal on here: notify as `run` would (loop/notify.py)."""
    if before is not None:
        import sys

        from harness.loop.notify import notify_transition

        notify_transition(repo, control.config, goal_id, before, cell, env, sys.stderr)


def refuse_if_owners_moved(control: Control, cell: Cell, goal_id: str) -> None:
    """No decision applies to a goal whose owners file moved: refuse it before anything is
    signed, rather than print "signed" and have the runner record nothing."""
    if control.owners_moved(cell):
        raise TrustFailure(
            f"goal {goal_id}: {OWNERS_PATH} on {control.ref} changed after the goal started"
            " (owners_changed), so no decision applies to it yet; first sign the change with"
            f" a key of the owners it started under: `harness rotate-owners {goal_id} --key K`"
            " (nothing was written)"
        )


def refuse_if_goal_changed(control: Control, cell: Cell, goal_id: str) -> None:
    """A decision names the goal file the gate was reached under; one signed after the file
    changed would never cross (the runner gates or revises first), so it is refused before
    anything is signed, rather than print "signed" and have nothing happen."""
    data = control.goal_bytes(goal_id)
    sha256 = hashlib.sha256(data).hexdigest()
    if cell.goal_sha256 is None or sha256 == cell.goal_sha256:
        return
    source = f"goals/{goal_id}.yaml"
    try:
        find_run_approval(control.approvals(goal_id), control.owners(), goal_id, sha256, source)
    except TrustFailure:
        raise TrustFailure(
            f"goal {goal_id}: {source} on {control.ref} changed since its approval (sha256 "
            f"{sha256[:12]}, the gate was reached under {cell.goal_sha256[:12]}); re-approve "
            f"first: `harness approve {goal_id} --key KEY`, commit it and let `harness run` "
            "record the revision (nothing was written)"
        ) from None
    raise TrustFailure(
        f"goal {goal_id}: {source} on {control.ref} was changed and approved since the gate "
        f"was reached (sha256 {sha256[:12]}, the gate's {cell.goal_sha256[:12]}); `harness "
        f"run {goal_id}` records the revision first, then decide on what it reaches "
        "(nothing was written)"
    )


def current_cell(
    repo: Repo, control: Control, goal_id: str, secret: Secret | None, push: str | None = None
) -> Cell:
    """The goal's cell: verified when the secret is at hand, else only read (see peek_cell).

    From the worktree, else the goal branch, else the remote's (remote_goal.goal_ref)."""
    local = repo.worktree_path(goal_id) / "ledger" / goal_id / "state.json"
    source = f"ledger/{goal_id}/state.json"
    signature = local.with_name(CHECKPOINT_FILE)
    data = local.read_bytes() if local.is_file() and push is None else None
    signed = signature.read_bytes() if data is not None and signature.is_file() else None
    if data is None:
        ref = goal_ref(repo, control, goal_id, push)
        data = repo.read_blob(ref, source) if ref is not None else None
        sig_source = f"ledger/{goal_id}/{CHECKPOINT_FILE}"
        signed = repo.read_blob(ref, sig_source) if ref is not None else None
    if data is None:
        raise InvalidInput(f"goal {goal_id}: has not started (nothing is waiting for a decision)")
    if secret is None:
        # The state a decision is bound to: a listed runner's, where the owners list runners.
        runners = control.runners()
        if runners is not None:
            vouch(goal_id, data, signed, runners)
        return peek_cell(data, source, goal_id)
    return parse_cell(data, source, goal_id, secret.goal_key(goal_id))


def _decision_for(cell: Cell, goal_id: str, extend: str | None, *, ship: bool) -> str:
    gate = cell.gate
    if cell.status not in WAITING or gate is None:
        raise InvalidInput(
            f"goal {goal_id}: is {cell.status}, not waiting at a gate (nothing to decide)"
        )
    if ship:
        if gate not in SHIP_GATES:
            raise InvalidInput(
                f"goal {goal_id}: waits at gate {gate}, not ship (use `harness unpark`)"
            )
        return "ship"
    if gate in SHIP_ONLY_GATES:
        raise InvalidInput(f"goal {goal_id}: waits at gate {gate} (use `harness ship`)")
    if gate in REVISION_ONLY_GATES:
        raise InvalidInput(
            f"goal {goal_id}: waits at gate {gate} ({cell.gate_detail}): no decision crosses "
            f"it (expected a higher cap under lifetime in goals/{goal_id}.yaml, approved)"
        )
    if extend is None:
        _refuse_without_budget(cell, goal_id, gate)
        return f"unpark {gate}"
    if gate not in EXTENDABLE_GATES:
        raise InvalidInput(
            f"--extend-budget: goal {goal_id} waits at gate {gate}, which a budget does not"
            f" cross (expected a plain `harness unpark {goal_id} --key KEY` here; a budget at"
            f" a gate of {', '.join(sorted(EXTENDABLE_GATES))})"
        )
    decision = f"extend-budget {extend}"
    _check_extension(cell, gate, parse_extension(decision))
    return decision


def _refuse_without_budget(cell: Cell, goal_id: str, gate: str) -> None:
    """A plain unpark that would only stop the goal at a budget gate, at once: refused
    before anything is signed, naming the extension that lets it go on."""
    blocking = _blocking(cell, gate)
    if not blocking:
        return
    key = blocking[0]
    stop = "there again" if gate in BUDGET_GATES else f"at {_budget_gate(key)} next"
    raise InvalidInput(
        f"goal {goal_id}: waits at gate {gate} ({_spent(cell, key)}): a plain unpark"
        f" would stop {stop}; it needs a budget (expected --extend-budget"
        f" {key}={_suggest(cell, key)})"
    )


def _budget_gate(key: str) -> str:
    return "max_passes" if key == "passes" else "budget_exhausted"


def _check_extension(cell: Cell, gate: str, limits: dict[str, Any]) -> None:
    """Each value is the new limit, not an addition: it must be above what is used, and
    every limit the gate stopped at must be raised, or the goal stops there at once."""
    for key, value in limits.items():
        used = getattr(cell.used, key)
        if value <= used:
            raise InvalidInput(
                f"--extend-budget: {key}={_num(value)} is not above the {_num(used)} already"
                f" used (the value sets the new limit, it does not add to it; expected"
                f" {key}={_suggest(cell, key)} or another value above {_num(used)})"
            )
    for key in _blocking(cell, gate):
        if key not in limits:
            raise InvalidInput(
                f"--extend-budget: {key} is used up ({_spent(cell, key)}) and this decision"
                f" keeps that limit (expected {key}={_suggest(cell, key)} as well)"
            )


def _blocking(cell: Cell, gate: str) -> list[str]:
    """The budget keys that hold the goal at its gate, or would stop it at a budget gate
    as soon as the gate is crossed (at no_progress, agent_unavailable: a build is next)."""
    if gate == "max_passes":
        return ["passes"]
    if gate == "budget_exhausted":
        return cell.exhausted() or ["iterations"]
    if gate not in EXTENDABLE_GATES:
        return []  # no build is next: the budget is checked again when one is
    passes = ["passes"] if cell.used.passes >= cell.limit.passes else []
    return passes + cell.exhausted()


def _spent(cell: Cell, key: str) -> str:
    return f"{key} {_num(getattr(cell.used, key))}/{_num(getattr(cell.limit, key))}"


def _suggest(cell: Cell, key: str) -> str:
    """A new limit that gives the goal as much again as it had."""
    used, limit = getattr(cell.used, key), getattr(cell.limit, key)
    return _num(used + max(limit, 1))


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
