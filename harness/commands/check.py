"""`harness check`: validate goals, approvals and owners in the checkout, one line per problem."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TextIO, TypeVar

from harness.errors import HarnessError, InvalidInput, invalid
from harness.loop.control import CONFIG_PATH, OWNERS_PATH
from harness.model.config import Config, parse_config
from harness.model.goal import Goal, parse_goal
from harness.model.goalid import MAX_GOAL_FILE_BYTES, check_goal_id, goal_source, stray_goal_note
from harness.model.lessons import (
    LESSONS_DIR,
    MAX_LESSONS,
    lesson_source,
    load_lessons,
    parse_lesson,
)
from harness.model.wording import show_value
from harness.record.visible import line
from harness.store.gitrepo import Repo, stored_bytes
from harness.trust.approvals import find_run_approval, parse_approval_file
from harness.trust.owners import Owner, parse_owners
from harness.trust.runners import RUNNERS_PATH, RUNNERS_SIG_PATH, check_runners

T = TypeVar("T")


def check(cwd: Path, goal_ids: list[str], out: TextIO, as_json: bool = False) -> int:
    root = Repo.discover(cwd).root
    problems: list[HarnessError] = []
    config = _guard(problems, lambda: working_config(root)) or parse_config(None, CONFIG_PATH)
    owners = _guard(problems, lambda: working_owners(root))
    ids = goal_ids or sorted(p.stem for p in (root / "goals").glob("*.yaml"))
    notes: list[str] = [] if goal_ids else _stray_notes(root / "goals")
    for goal_id in ids:
        _guard(problems, partial(check_goal, root, goal_id, config, owners, notes))
    if not goal_ids:
        problems += lesson_problems(root)
        if owners is not None:
            _guard(problems, lambda: working_runners(root, owners))
    code = max((p.exit_code for p in problems), default=0)
    if as_json:
        listed = [{"message": str(p), "exit_code": p.exit_code} for p in problems]
        document = {"ok": not problems, "goals": len(ids), "owner_keys": len(owners or ())}
        out.write(json.dumps(document | {"problems": listed, "notes": notes}, indent=2) + "\n")
        return code
    for problem in problems:
        out.write(line(problem))
    for note in notes:
        out.write(line(f"note: {note}"))
    if not problems:
        out.write(line(f"ok: {len(ids)} goal(s), {len(owners or ())} owner key(s)"))
    return code


def _check_scripts(root: Path, goal: Goal) -> None:
    """An agent step whose command is a relative path (`./agent.sh`, `scripts/agent`) to a
    file that is not in the checkout would fail at its first run: say so now. A bare word
    (`claude`, `make`) is looked up on PATH when the step runs, and is not checked here."""
    for key, spec in (("plan.run", goal.plan), ("build.run", goal.build)):
        if spec is None:
            continue
        first = spec.run[0]
        if "/" not in first or first.startswith("/"):
            continue
        target = (root / first).resolve()
        if not (target.is_relative_to(root.resolve()) and target.is_file()):
            raise invalid(
                goal.source,
                key,
                f"{show_value(first)} is not a file in the repository",
                "a script committed with the goal, an absolute path, or a command on PATH",
            )


def _stray_notes(folder: Path) -> list[str]:
    """`goals/` entries never read as goals (a subfolder, a `.yml` file), in the checkout."""
    if not folder.is_dir():
        return []
    found = (
        stray_goal_note(entry.name, entry.is_dir())
        for entry in sorted(folder.iterdir())
        if not entry.name.endswith((".yaml", ".approval"))
    )
    return [note for note in found if note is not None]


def lesson_problems(root: Path) -> list[HarnessError]:
    """Every problem with the lessons in the checkout (`lessons/*.yaml`), one per file: the
    checks `run` makes on the control ref's lessons before any step."""
    folder = root / LESSONS_DIR
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    problems: list[HarnessError] = []
    if len(files) > MAX_LESSONS:  # the count is checked before any file is read
        _guard(problems, lambda: load_lessons({p.stem: b"" for p in files}))
        return problems
    for path in files:
        name = path.stem
        _guard(problems, partial(parse_lesson, path.read_bytes(), lesson_source(name), name))
    return problems


def _guard(problems: list[HarnessError], work: Callable[[], T]) -> T | None:
    """Run one check; a problem is collected, so every problem is reported, not the first."""
    try:
        return work()
    except HarnessError as exc:
        problems.append(exc)
        return None


def working_config(root: Path) -> Config:
    """The working tree's `.harness/config.yaml` (what `check` and `approve` read)."""
    path = root / CONFIG_PATH
    return parse_config(path.read_bytes() if path.is_file() else None, CONFIG_PATH)


def working_runners(root: Path, owners: tuple[Owner, ...]) -> None:
    """`.harness/runners`, where the checkout has one: its lines and an owner's signature
    over its bytes (`harness runners sign`), as clones will check them once committed."""
    path = root / RUNNERS_PATH
    if not path.is_file():
        return
    data = stored_bytes(root, RUNNERS_PATH, path.read_bytes())
    sig = root / RUNNERS_SIG_PATH
    check_runners(data, sig.read_bytes() if sig.is_file() else None, owners)


def working_owners(root: Path) -> tuple[Owner, ...]:
    """The working tree's `.harness/owners`; a missing file says how to make it."""
    path = root / OWNERS_PATH
    if not path.is_file():
        raise InvalidInput(f"{OWNERS_PATH}: missing (run `harness init --owner P --key PUBKEY`)")
    owners = parse_owners(path.read_text(encoding="utf-8", errors="replace"), OWNERS_PATH)
    if not owners:
        raise InvalidInput(
            f"{OWNERS_PATH}: lists no owner (expected at least one `principal ssh-ed25519 AAAA…` line)"
        )
    return owners


def stored_goal_bytes(root: Path, goal_id: str, notes: list[str]) -> bytes:
    """The goal file as git stores it (what `run` reads once it is committed), with a note
    when the working copy differs (core.autocrlf, an `eol` attribute): `approve`, `check`
    and `run` then all hash the same bytes."""
    rel = f"goals/{goal_id}.yaml"
    data = (root / rel).read_bytes()
    stored = stored_bytes(root, rel, data)
    if stored != data:
        notes.append(
            f"{rel}: the working copy differs from the blob git stores (line endings:"
            " core.autocrlf or an eol attribute); approvals hash the stored blob, as `run` does"
        )
    return stored


def check_goal(
    root: Path, goal_id: str, config: Config, owners: tuple[Owner, ...] | None, notes: list[str]
) -> Goal:
    """Check a goal file (and its approval, when there is one); the goal it holds."""
    check_goal_id(goal_id, goal_source(goal_id))
    path = root / "goals" / f"{goal_id}.yaml"
    if not path.is_file():
        raise InvalidInput(f"goals/{goal_id}.yaml: no such goal file")
    if path.stat().st_size > MAX_GOAL_FILE_BYTES:
        raise InvalidInput(
            f"goals/{goal_id}.yaml: {path.stat().st_size} bytes (expected at most {MAX_GOAL_FILE_BYTES})"
        )
    principals = {p for o in owners for p in o.principals} if owners else None
    data = stored_goal_bytes(root, goal_id, notes)
    goal = parse_goal(data, f"goals/{goal_id}.yaml", goal_id, config.defaults, principals)
    _check_scripts(root, goal)
    approval = root / "goals" / f"{goal_id}.approval"
    if not approval.is_file():
        notes.append(
            f"goals/{goal_id}.yaml: not approved yet (run `harness approve {goal_id} --key KEY`)"
        )
        return goal
    source = f"goals/{goal_id}.approval"
    records = parse_approval_file(approval.read_text(encoding="utf-8", errors="replace"), source)
    if owners is not None:
        find_run_approval(records, owners, goal_id, goal.sha256, source)
    return goal
