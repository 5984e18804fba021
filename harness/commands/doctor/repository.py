"""Doctor's checks of the repository: its human-owned files, what the control ref holds, the
records (with the secret) and the secrets committed in them."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.commands.doctor.findings import OK, WARN, Finding, fail, from_error
from harness.commands.doctor.programs import program_check, sandbox_of
from harness.commands.doctor.worktrees import locks, worktrees
from harness.errors import HarnessError, TrustFailure
from harness.loop.control import CONFIG_PATH, OWNERS_PATH, Control, open_control
from harness.model.config import Config, parse_config
from harness.model.goal import Goal
from harness.store.gitrepo import Repo
from harness.store.objects import read_blobs
from harness.trust.owners import Owner, load_owners
from harness.trust.secret import Secret

OWNER_LINE_HELP = (
    "each line is `principal ssh-ed25519 AAAA… [comment]`; "
    "`ssh-keygen -y -f ~/.ssh/id_ed25519` prints a key's public half"
)


def repository(cwd: Path) -> tuple[Repo | None, Finding]:
    try:
        repo = Repo.discover(cwd)
    except HarnessError as exc:
        return None, from_error("repository", exc, "run harness inside a git checkout")
    head = repo.rev_parse("HEAD")
    if head is None:
        problem = repo.missing_commit("HEAD")
        if isinstance(problem, TrustFailure):  # damaged, not empty: its message says what to do
            return repo, from_error("repository", problem, "run `git fsck`")
        fix = "commit .harness/, goals/ and ledger/ (after `harness init`)"
        return repo, fail("repository", f"{repo.root} has no commits yet", fix)
    return repo, Finding("repository", OK, f"{repo.root} at {head[:12]}")


def repository_checks(
    repo: Repo, env: Mapping[str, str], secret: Secret | None, has_commit: bool
) -> list[Finding]:
    root = repo.root
    config, found = config_check(root)
    owners, finding = _owners(root)
    findings = [found, finding, *_goals(repo, config, owners, env), *_lessons(root)]
    control = _guarded(findings, "control-ref", lambda: open_control(repo)) if has_commit else None
    if control is not None:
        findings.append(_committed(repo, control))
        if secret is not None:
            findings.append(_records(root, env))
            findings.append(_leaks(root, env))
        findings.append(worktrees(repo, control.config.branch_prefix))
    findings.append(locks(repo))
    return findings


def _guarded(findings: list[Finding], check: str, work: Callable[[], Control]) -> Control | None:
    try:
        return work()
    except HarnessError as exc:
        findings.append(from_error(check, exc, "fix the problem named above"))
        return None


def config_check(root: Path) -> tuple[Config, Finding]:
    path = root / CONFIG_PATH
    fallback = parse_config(None, CONFIG_PATH)
    if not path.is_file():
        return fallback, Finding("config", OK, f"no {CONFIG_PATH}; the defaults apply")
    try:
        config = parse_config(path.read_bytes(), CONFIG_PATH)
    except HarnessError as exc:
        fix = f"edit {CONFIG_PATH} at the key named above (docs/specs/goal-file.md lists them)"
        return fallback, from_error("config", exc, fix)
    return config, Finding("config", OK, f"{CONFIG_PATH} is valid")


def _owners(root: Path) -> tuple[tuple[Owner, ...] | None, Finding]:
    if not (root / OWNERS_PATH).is_file():
        fix = "`harness init --owner you@example.com --key ~/.ssh/id_ed25519.pub`, then commit it"
        return None, fail("owners", f"{OWNERS_PATH} does not exist", fix)
    try:
        owners = load_owners(root / OWNERS_PATH, OWNERS_PATH)
    except HarnessError as exc:
        return None, from_error("owners", exc, f"correct that line: {OWNER_LINE_HELP}")
    if not owners:
        fix = f"add an owner line: {OWNER_LINE_HELP}"
        return None, fail("owners", f"{OWNERS_PATH} lists no owner", fix)
    principals = sorted({p for owner in owners for p in owner.principals})
    return owners, Finding("owners", OK, f"{len(owners)} key(s) for {', '.join(principals)}")


def _goals(
    repo: Repo, config: Config, owners: tuple[Owner, ...] | None, env: Mapping[str, str]
) -> list[Finding]:
    """Each goal file's check, and after each approved goal's its build program's."""
    ids = sorted(p.stem for p in (repo.root / "goals").glob("*.yaml"))
    if not ids:
        return [Finding("goals", WARN, "no goal files in goals/", "`harness new <id>`")]
    sandbox = sandbox_of(config, env)
    found: list[Finding] = []
    for goal_id in ids:
        finding, goal = _goal(repo.root, goal_id, config, owners)
        found.append(finding)
        if goal is not None:
            found.append(program_check(repo, goal, config, sandbox, env))
    return found


def _lessons(root: Path) -> list[Finding]:
    """Each bad lesson file (the checks `harness check` makes), or one line for them all."""
    from harness.commands.check import lesson_problems

    problems = lesson_problems(root)
    if problems:
        fix = "correct that lesson at the key named above (docs/specs/lessons.md), then commit it"
        return [from_error("lessons", exc, fix) for exc in problems]
    count = len(list((root / "lessons").glob("*.yaml")))
    return [Finding("lessons", OK, f"{count} lesson file(s) valid" if count else "no lessons yet")]


def _goal(
    root: Path, goal_id: str, config: Config, owners: tuple[Owner, ...] | None
) -> tuple[Finding, Goal | None]:
    """The goal file's finding, and the goal when it is valid and approved."""
    # The very checks `harness check` makes, so the two never disagree.
    from harness.commands.check import check_goal

    check = f"goal {goal_id}"
    notes: list[str] = []
    approve = f"`harness approve {goal_id} --key ~/.ssh/id_ed25519`, then commit goals/{goal_id}.*"
    try:
        goal = check_goal(root, goal_id, config, owners, notes)
    except TrustFailure as exc:
        return fail(check, str(exc), approve, trust=True), None
    except HarnessError as exc:
        fix = f"edit goals/{goal_id}.yaml at the key named above, then approve it again"
        return from_error(check, exc, fix), None
    if not (root / "goals" / f"{goal_id}.approval").is_file():
        return Finding(check, WARN, "valid, not approved yet", approve), None
    if owners is None:
        return Finding(check, WARN, "valid; approval not checked", f"fix {OWNERS_PATH} first"), None
    return Finding(check, OK, "; ".join(["valid and approved", *notes])), goal


def _committed(repo: Repo, control: Control) -> Finding:
    """`harness run` reads the control ref, not the checkout: say when they differ."""
    names = _human_files(repo.root) | {
        f"goals/{n}" for n in repo.list_names(control.commit, "goals") if _is_goal_file(n)
    }
    paths = sorted(names | {OWNERS_PATH, CONFIG_PATH})
    committed = read_blobs(repo.root, [f"{control.commit}:{p}" for p in paths])
    differ = [
        f"{path} ({why})"
        for path, blob in zip(paths, committed, strict=True)
        if (why := _difference(repo.root / path, blob))
    ]
    ref = control.ref.removeprefix("refs/heads/")
    if not differ:
        return Finding("committed", OK, f"goals and .harness files match {ref}")
    return Finding(
        "committed",
        WARN,
        f"`harness run` reads {ref}; the checkout differs: {', '.join(differ)}",
        "commit them (`git add goals .harness && git commit`) or drop the edits",
    )


def _is_goal_file(name: str) -> bool:
    return name.endswith((".yaml", ".approval"))


def _human_files(root: Path) -> set[str]:
    folder = root / "goals"
    return (
        {f"goals/{p.name}" for p in folder.iterdir() if _is_goal_file(p.name)}
        if folder.is_dir()
        else set()
    )


def _difference(path: Path, committed: bytes | None) -> str | None:
    local = path.read_bytes() if path.is_file() else None
    if local == committed:
        return None
    if committed is None:
        return "not committed"
    return "deleted" if local is None else "modified"


def _records(root: Path, env: Mapping[str, str]) -> Finding:
    """Every goal's state cell, MAC-checked with this secret (what `harness status` does)."""
    from harness.commands.status import status

    buffer = io.StringIO()
    try:
        status(root, [], True, False, env, buffer)
    except HarnessError as exc:
        fix = "use the secret these records were made with; `harness verify` names the first bad event"
        return from_error("records", exc, fix)
    started = [row["id"] for row in json.loads(buffer.getvalue()) if row["head"] is not None]
    if not started:
        return Finding("records", OK, "no goal has started yet")
    return Finding(
        "records", OK, f"{len(started)} goal record(s); each state cell's MAC matches the secret"
    )


def _leaks(root: Path, env: Mapping[str, str]) -> Finding:
    """`harness verify --secrets` over every record: a secret this runner holds, or a token
    of a known shape, committed in an event (named by segment, line and receipt)."""
    from harness.commands.verify import verify

    buffer = io.StringIO()
    try:
        verify(root, [], env, buffer, as_json=True, err=io.StringIO(), secrets=True)
    except HarnessError as exc:
        return from_error("secrets", exc, "`harness verify --secrets` says more")
    leaks = [
        f"{goal['id']}: {entry}"
        for goal in json.loads(buffer.getvalue())["goals"]
        for entry in goal.get("failure", {}).get("secrets", [])
    ]
    if not leaks:
        return Finding("secrets", OK, "no record holds a secret this runner holds or a known token")
    fix = (
        'rotate each leaked secret now; docs/guide/threat-model.md, "After a leak", says what'
        " else to do"
    )
    shown = "; ".join(leaks[:5]) + (f"; … {len(leaks) - 5} more" if len(leaks) > 5 else "")
    return fail("secrets", f"{len(leaks)} secret(s) in the record: {shown}", fix, trust=True)
