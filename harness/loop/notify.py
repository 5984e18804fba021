"""Telling someone: one notification per transition into a state a human cares about.

The config's `notify:` names a webhook (an HTTP POST of a small JSON document, standard
library only, with a timeout) and/or a command given the same document on stdin. It fires
when a goal's advance ends in `parked_at_eyes`, `needs_attention`, `failed` or `completed`
and its (status, gate) differs from what it was before, and once per stale spell when a
run or `status --check` finds a goal stale (docs/specs/notify.md). A failure is
one line on stderr and in `.git/harness/notify.log`; it is never fatal and never retried
(the next notification is the next transition's).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.errors import HarnessError
from harness.loop.notice import transition_document
from harness.loop.steps import child_env
from harness.model.config import Config, Notify
from harness.model.limits import show_duration
from harness.record.cell import Cell, peek_cell
from harness.record.stale import stale_after
from harness.record.visible import line, one_line
from harness.store.fsutil import atomic_write, read_no_follow
from harness.store.gitrepo import Repo

NOTIFIED = frozenset({"parked_at_eyes", "needs_attention", "failed", "completed"})
# (status, gate, run): a recurring goal's next run ending as the last one did is news.
Seen = tuple[str, str | None, int]


def seen_before(repo: Repo, branch: str, goal_id: str, remote_ref: str | None) -> Seen:
    """(status, gate) as last known before this advance. With --push, the remote's branch as
    just fetched (a transition another runner made and pushed is theirs to tell); else the
    worktree's cell, else the branch's; pending when there is none."""
    source = f"ledger/{goal_id}/state.json"
    local = repo.worktree_path(goal_id) / source
    data = repo.read_blob(remote_ref, source) if remote_ref is not None else None
    if data is None and local.is_file():
        data = local.read_bytes()
    if data is None:
        data = repo.read_blob(f"refs/heads/{branch}", source)
    if data is None:
        return ("pending", None, 1)
    try:
        cell = peek_cell(data, source, goal_id)
    except HarnessError:  # an unreadable cell: the advance itself names it
        return ("unknown", None, 0)
    return (cell.status, cell.gate, cell.run)


def notify_transition(
    repo: Repo,
    config: Config,
    goal_id: str,
    before: Seen,
    after: Cell,
    env: Mapping[str, str],
    err: TextIO | None,
) -> None:
    """Send the notification if `after` is a new state worth telling; never raises. For a
    recurring goal each run's outcome is new (the run is part of what was seen), so a
    nightly that fails every night is told every night, once a night."""
    settings = config.notify
    if settings is None or after.status not in NOTIFIED:
        return
    if (after.status, after.gate, after.run) == before:
        return
    document = transition_document(repo.root.name, goal_id, before, after)
    _send(repo, config, settings, document, env, err)


def notify_stale(
    repo: Repo, config: Config, cell: Cell, env: Mapping[str, str], err: TextIO | None
) -> None:
    """Tell once that the goal went stale (the caller found `is_stale`); never raises.

    "Told" is machine-local, `.git/harness/stale-told/<id>.json`, keyed by the cell's
    `advanced_at` and ledger position: the same stale spell is told once however many
    runs and checks see it; after the goal advances, its next stale spell is told again."""
    settings = config.notify
    if settings is None:
        return
    told = repo.harness_dir() / "stale-told" / f"{cell.goal}.json"
    spell = {"advanced_at": cell.advanced_at, "ledger": str(cell.position)}
    try:  # not through a link, not a FIFO: whoever can write .git/harness/ can't hang it
        recorded = read_no_follow(told)
        if recorded is not None and len(recorded) < 4096 and json.loads(recorded) == spell:
            return
    except (OSError, ValueError, HarnessError):
        pass  # never told (or an unreadable record: telling twice beats never telling)
    try:  # first the record, then the message: two tellers at once give a duplicate at most
        told.parent.mkdir(exist_ok=True)
        atomic_write(told, json.dumps(spell, sort_keys=True).encode() + b"\n")
    except (OSError, HarnessError) as exc:
        _record(repo, cell.goal, "stale", f"cannot record it as told: {exc}", err)
        return
    _send(repo, config, settings, _stale_document(repo, cell), env, err)


def _send(
    repo: Repo,
    config: Config,
    settings: Notify,
    document: dict[str, object],
    env: Mapping[str, str],
    err: TextIO | None,
) -> None:
    body = json.dumps(document, sort_keys=True).encode("utf-8")
    failures = []
    if settings.webhook is not None:
        failures += _post(settings, body, env)
    if settings.command is not None:
        failures += _command(settings, body, env, config.scrub_env, repo.root)
    for failure in failures:
        _record(repo, str(document["goal"]), document["status"], failure, err)


def _stale_document(repo: Repo, cell: Cell) -> dict[str, object]:
    """The transition document with status `stale`; `previous` is the recorded status."""
    after = stale_after(cell)
    return {
        "goal": cell.goal,
        "status": "stale",
        "gate": cell.gate,
        "previous": cell.status,
        "iteration": cell.iteration,
        "ledger_seq": cell.position.seq,
        "repository": repo.root.name,
        "advanced_at": cell.advanced_at,
        "stale_after_s": after,
        "text": one_line(
            f"goal-harness: {cell.goal} is stale: nothing advanced it since "
            f"{cell.advanced_at}, longer than halt.stale_after {show_duration(after)} ({repo.root.name})"
        ),
    }


def _post(settings: Notify, body: bytes, env: Mapping[str, str]) -> list[str]:
    url = settings.webhook or ""
    if url.startswith("$"):
        url = env.get(url[1:], "")
        if not url.startswith(("http://", "https://")):
            return [f"webhook: {settings.webhook} is not set to an http(s) URL here"]
    problem = post(url, body, settings.timeout_s)
    return [] if problem is None else [f"webhook: {problem}"]


def post(url: str, body: bytes, timeout_s: float) -> str | None:
    """POST `body` as JSON to `url`: None when the server took it (HTTP < 400), else what
    went wrong, never naming the URL (it is usually a credential)."""
    return post_status(url, body, timeout_s)[1]


def post_status(url: str, body: bytes, timeout_s: float) -> tuple[int | None, str | None]:
    """`post`, and the HTTP status the server answered (None: no answer)."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read(4096)
            return int(response.status), None
    except urllib.error.HTTPError as exc:  # the URL (a credential) is never printed
        return exc.code, f"the server answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = str(getattr(exc, "reason", exc)).replace(url, "<the URL>")
        return None, f"{type(exc).__name__}: {reason}"


def _command(
    settings: Notify, body: bytes, env: Mapping[str, str], scrub: tuple[str, ...], cwd: Path
) -> list[str]:
    argv = list(settings.command or ())
    try:
        proc = subprocess.run(
            argv,
            input=body,
            cwd=cwd,
            env=child_env(env, scrub, {}),  # never the secret
            capture_output=True,
            timeout=settings.timeout_s,
        )
    except subprocess.TimeoutExpired:
        return [f"command {argv[0]}: did not finish in {settings.timeout_s}s"]
    except OSError as exc:
        return [f"command {argv[0]}: {exc.strerror}"]
    if proc.returncode != 0:
        return [f"command {argv[0]}: exited {proc.returncode}"]
    return []


def _record(repo: Repo, goal_id: str, status: object, failure: str, err: TextIO | None) -> None:
    told = f"notify failed for {goal_id} ({status}): {failure}"
    if err is not None:
        err.write(line(f"harness: {goal_id}: {told}"))
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(repo.harness_dir() / "notify.log", "a", encoding="utf-8") as log:
            log.write(line(f"{stamp} {told}"))
    except OSError:
        pass  # the stderr line is the record then
