"""`harness doctor`: can this machine and repository run goals? Says how to fix what not.

Each check prints `ok|warn|fail <check>: <finding>`, and a `fix:` line for a warning or a
failure. Doctor changes nothing in the repository: it reads files, asks git, and probes
lock files. The secret's value is never printed, only where it came from and its length.

Exit: 0 when nothing failed; 3 when a failure is a trust problem (no usable secret, a
secret that does not match the goal records, an approval that does not verify, a worktree
on the wrong branch), which `harness run` would refuse with 3 too; else 2.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.errors import HarnessError, InvalidInput, TrustFailure
from harness.loop.agents_support import SUPPORTED, AgentCli, probe
from harness.loop.control import CONFIG_PATH, OWNERS_PATH, Control, open_control
from harness.model.config import Config, parse_config
from harness.record.visible import line
from harness.store.gitrepo import Repo, run_git
from harness.store.lock import lock_holder
from harness.store.objects import read_blobs
from harness.store.worktree import RegisteredWorktree, list_worktrees
from harness.trust.owners import Owner, load_owners
from harness.trust.secret import (
    ENV_SECRET,
    ENV_SECRET_FILE,
    Secret,
    default_secret_file,
    load_secret,
)

OK, WARN, FAIL = "ok", "warn", "fail"
# `git rev-parse --path-format` (Repo.discover) and the `prunable` mark in
# `git worktree list --porcelain` both arrived in git 2.31.
MIN_GIT = (2, 31)
OWNER_LINE_HELP = (
    "each line is `principal ssh-ed25519 AAAA… [comment]`; "
    "`ssh-keygen -y -f ~/.ssh/id_ed25519` prints a key's public half"
)


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warn | fail
    finding: str
    fix: str | None = None
    exit_code: int = 0  # for a failure: 3 for a trust problem, else 2

    def as_dict(self) -> dict[str, str | None]:
        return {
            "check": self.check,
            "status": self.status,
            "finding": self.finding,
            "fix": self.fix,
        }


def doctor(cwd: Path, env: Mapping[str, str], out: TextIO, as_json: bool) -> int:
    findings = run_checks(cwd, env)
    if as_json:
        out.write(json.dumps([f.as_dict() for f in findings], indent=2) + "\n")
    else:
        out.writelines(_text(f) for f in findings)
        counts = {s: sum(f.status == s for f in findings) for s in (OK, WARN, FAIL)}
        out.write(line(f"doctor: {counts[OK]} ok, {counts[WARN]} warn, {counts[FAIL]} fail"))
    return exit_code(findings)


def exit_code(findings: list[Finding]) -> int:
    codes = {f.exit_code for f in findings if f.status == FAIL}
    if TrustFailure.exit_code in codes:
        return TrustFailure.exit_code
    return InvalidInput.exit_code if codes else 0


def _text(f: Finding) -> str:
    fix = f.fix and f.status != OK
    return line(f"{f.status} {f.check}: {f.finding}") + (line(f"  fix: {f.fix}") if fix else "")


def _fail(check: str, finding: str, fix: str, trust: bool = False) -> Finding:
    code = TrustFailure.exit_code if trust else InvalidInput.exit_code
    return Finding(check, FAIL, finding, fix, code)


def _from_error(check: str, exc: HarnessError, fix: str) -> Finding:
    return _fail(check, str(exc), fix, trust=isinstance(exc, TrustFailure))


def run_checks(cwd: Path, env: Mapping[str, str]) -> list[Finding]:
    repo, repo_finding = _repository(cwd)
    secret, secret_finding = _secret(env, repo.root if repo else None)
    found = [_git_version(cwd), _python(), repo_finding, secret_finding, _secret_file(env)]
    if repo is not None:
        found += _repository_checks(repo, env, secret, has_commit=repo_finding.status == OK)
    found.append(_ssh_keygen(env))
    config = _config(repo.root)[0] if repo is not None else None
    scrub = config.scrub_env if config is not None else ()
    found.append(_sandbox(config, env))
    found += [_agent(cli, cwd, env, scrub) for cli in SUPPORTED]
    return found


# --- the machine ------------------------------------------------------------------------


def _sandbox(config: Config | None, env: Mapping[str, str]) -> Finding:
    from harness.loop.sandbox import FIX, resolve

    try:
        sandbox = resolve(config.sandbox if config else None, env)
    except TrustFailure as exc:
        return _fail("sandbox", str(exc), FIX, trust=True)
    except InvalidInput as exc:
        return _fail("sandbox", str(exc), "set HARNESS_SANDBOX to auto, required or off")
    if sandbox.on:
        return Finding("sandbox", OK, f"{sandbox.describe()}: {sandbox.bwrap} works")
    fix = "remove `sandbox: off` from .harness/config.yaml" if sandbox.mode == "off" else FIX
    return Finding("sandbox", WARN, sandbox.describe(), fix)


def parse_git_version(text: str) -> tuple[int, int] | None:
    match = re.search(r"git version (\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


def _git_version(cwd: Path) -> Finding:
    fix = f"install git {MIN_GIT[0]}.{MIN_GIT[1]} or newer"
    try:
        text = run_git(["--version"], cwd, check=False).stdout.decode("utf-8", "replace").strip()
    except OSError:
        return _fail("git", "git is not on PATH", fix)
    version = parse_git_version(text)
    if version is None:
        return _fail("git", f"cannot read a version from {text!r}", fix)
    shown = text.removeprefix("git version ")
    if version < MIN_GIT:
        return _fail("git", f"{shown} is older than {MIN_GIT[0]}.{MIN_GIT[1]}", fix)
    return Finding("git", OK, shown)


def _python() -> Finding:
    shown = ".".join(map(str, sys.version_info[:3]))
    # Goal records read from a branch are unpacked with tarfile's extraction filters,
    # added in 3.11.4; before that, replay and verify of a branch would fail.
    if not hasattr(tarfile, "data_filter"):
        return _fail(
            "python", f"{shown} has no tarfile extraction filters", "use Python 3.11.4 or newer"
        )
    return Finding("python", OK, shown)


def _ssh_keygen(env: Mapping[str, str]) -> Finding:
    path = shutil.which("ssh-keygen", path=env.get("PATH"))
    if path:
        return Finding("ssh-keygen", OK, path)
    return Finding(
        "ssh-keygen",
        WARN,
        "not found on PATH",
        "install the OpenSSH client (e.g. `apt-get install openssh-client`) to make keys and "
        "check approvals with `ssh-keygen -Y verify`; `harness approve` does not need it",
    )


def _agent(cli: AgentCli, cwd: Path, env: Mapping[str, str], scrub: tuple[str, ...]) -> Finding:
    """Each agent CLI on PATH, its version, and whether the suite tested that version."""
    check = f"agent {cli.name}"
    found = probe(cli, env, scrub, cwd)
    guide = f"docs/guide/agents/{cli.name}.md"
    if found.path is None:
        return Finding(check, OK, f"not on PATH (only goals that run {cli.name} need it)")
    if found.version is None:
        fix = f"check that {found.path} runs; install the tested version: {cli.install}"
        return Finding(check, WARN, f"{found.path}: {found.problem}", fix)
    if not cli.in_tested_range(found.version):
        fix = f"install the tested version: {cli.install} (see {guide})"
        finding = f"{found.version} at {found.path} is outside the tested range {cli.tested}"
        return Finding(check, WARN, finding, fix)
    return Finding(check, OK, f"{found.version} at {found.path} (tested: {cli.tested})")


# --- the secret -------------------------------------------------------------------------


def _secret(env: Mapping[str, str], root: Path | None) -> tuple[Secret | None, Finding]:
    try:
        secret = load_secret(env, root)
    except TrustFailure as exc:
        fix = (
            f"run `harness secret new` (writes {default_secret_file(env)}), or set "
            f"{ENV_SECRET_FILE} to a file outside the repository, or {ENV_SECRET} in CI"
        )
        return None, _fail("secret", str(exc), fix, trust=True)
    return secret, Finding("secret", OK, f"{len(secret.value)} bytes from {secret.origin}")


def _secret_file(env: Mapping[str, str]) -> Finding:
    named = env.get(ENV_SECRET_FILE)
    path = Path(named).expanduser() if named else default_secret_file(env)
    if not path.is_file():
        if env.get(ENV_SECRET):
            return Finding("secret-file", OK, f"none at {path}; the secret comes from {ENV_SECRET}")
        return Finding(
            "secret-file", WARN, f"{path} does not exist", f"`harness secret new --file {path}`"
        )
    mode = path.stat().st_mode & 0o777
    if mode & 0o066:
        return Finding(
            "secret-file",
            WARN,
            f"{path} is readable or writable by group or others (mode {mode:04o})",
            f"chmod 600 {path}",
        )
    return Finding("secret-file", OK, f"{path} (mode {mode:04o})")


# --- the repository ---------------------------------------------------------------------


def _repository(cwd: Path) -> tuple[Repo | None, Finding]:
    try:
        repo = Repo.discover(cwd)
    except HarnessError as exc:
        return None, _from_error("repository", exc, "run harness inside a git checkout")
    head = repo.rev_parse("HEAD")
    if head is None:
        fix = "commit .harness/, goals/ and ledger/ (after `harness init`)"
        return repo, _fail("repository", f"{repo.root} has no commits yet", fix)
    return repo, Finding("repository", OK, f"{repo.root} at {head[:12]}")


def _repository_checks(
    repo: Repo, env: Mapping[str, str], secret: Secret | None, has_commit: bool
) -> list[Finding]:
    root = repo.root
    config, found = _config(root)
    owners, finding = _owners(root)
    findings = [found, finding, *_goals(root, config, owners), *_lessons(root)]
    control = _guarded(findings, "control-ref", lambda: open_control(repo)) if has_commit else None
    if control is not None:
        findings.append(_committed(repo, control))
        if secret is not None:
            findings.append(_records(root, env))
            findings.append(_leaks(root, env))
        findings.append(_worktrees(repo, control.config.branch_prefix))
    findings.append(_locks(repo))
    return findings


def _guarded(findings: list[Finding], check: str, work: Callable[[], Control]) -> Control | None:
    try:
        return work()
    except HarnessError as exc:
        findings.append(_from_error(check, exc, "fix the problem named above"))
        return None


def _config(root: Path) -> tuple[Config, Finding]:
    path = root / CONFIG_PATH
    fallback = parse_config(None, CONFIG_PATH)
    if not path.is_file():
        return fallback, Finding("config", OK, f"no {CONFIG_PATH}; the defaults apply")
    try:
        config = parse_config(path.read_bytes(), CONFIG_PATH)
    except HarnessError as exc:
        fix = f"edit {CONFIG_PATH} at the key named above (docs/specs/goal-file.md lists them)"
        return fallback, _from_error("config", exc, fix)
    return config, Finding("config", OK, f"{CONFIG_PATH} is valid")


def _owners(root: Path) -> tuple[tuple[Owner, ...] | None, Finding]:
    if not (root / OWNERS_PATH).is_file():
        fix = "`harness init --owner you@example.com --key ~/.ssh/id_ed25519.pub`, then commit it"
        return None, _fail("owners", f"{OWNERS_PATH} does not exist", fix)
    try:
        owners = load_owners(root / OWNERS_PATH, OWNERS_PATH)
    except HarnessError as exc:
        return None, _from_error("owners", exc, f"correct that line: {OWNER_LINE_HELP}")
    if not owners:
        fix = f"add an owner line: {OWNER_LINE_HELP}"
        return None, _fail("owners", f"{OWNERS_PATH} lists no owner", fix)
    principals = sorted({p for owner in owners for p in owner.principals})
    return owners, Finding("owners", OK, f"{len(owners)} key(s) for {', '.join(principals)}")


def _goals(root: Path, config: Config, owners: tuple[Owner, ...] | None) -> list[Finding]:
    ids = sorted(p.stem for p in (root / "goals").glob("*.yaml"))
    if not ids:
        return [Finding("goals", WARN, "no goal files in goals/", "`harness new <id>`")]
    return [_goal(root, goal_id, config, owners) for goal_id in ids]


def _lessons(root: Path) -> list[Finding]:
    """Each bad lesson file (the checks `harness check` makes), or one line for them all."""
    from harness.commands.check import lesson_problems

    problems = lesson_problems(root)
    if problems:
        fix = "correct that lesson at the key named above (docs/specs/lessons.md), then commit it"
        return [_from_error("lessons", exc, fix) for exc in problems]
    count = len(list((root / "lessons").glob("*.yaml")))
    return [Finding("lessons", OK, f"{count} lesson file(s) valid" if count else "no lessons yet")]


def _goal(root: Path, goal_id: str, config: Config, owners: tuple[Owner, ...] | None) -> Finding:
    # The very checks `harness check` makes, so the two never disagree.
    from harness.commands.check import _check_goal

    check = f"goal {goal_id}"
    notes: list[str] = []
    approve = f"`harness approve {goal_id} --key ~/.ssh/id_ed25519`, then commit goals/{goal_id}.*"
    try:
        _check_goal(root, goal_id, config, owners, notes)
    except TrustFailure as exc:
        return _fail(check, str(exc), approve, trust=True)
    except HarnessError as exc:
        fix = f"edit goals/{goal_id}.yaml at the key named above, then approve it again"
        return _from_error(check, exc, fix)
    if not (root / "goals" / f"{goal_id}.approval").is_file():
        return Finding(check, WARN, "valid, not approved yet", approve)
    if owners is None:
        return Finding(check, WARN, "valid; approval not checked", f"fix {OWNERS_PATH} first")
    return Finding(check, OK, "; ".join(["valid and approved", *notes]))


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
        return _from_error("records", exc, fix)
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
        return _from_error("secrets", exc, "`harness verify --secrets` says more")
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
    return _fail("secrets", f"{len(leaks)} secret(s) in the record: {shown}", fix, trust=True)


# --- worktrees and locks ----------------------------------------------------------------


def _worktrees(repo: Repo, prefix: str) -> Finding:
    ours = _goal_worktrees(repo)
    wrong = [p for wt in ours if (p := _off_branch(wt, prefix))]
    if wrong:
        fix = "check the goal branch out there again, or `git worktree remove <path>` (the branch keeps the record)"
        return _fail("worktrees", "; ".join(wrong), fix, trust=True)
    stale = [p for wt in ours if (p := _stale(wt))] + _strays(repo, ours)
    if stale:
        fix = "`git worktree prune`; move a stray folder away (it may hold work): harness run recreates worktrees"
        return Finding("worktrees", WARN, "; ".join(stale), fix)
    return Finding("worktrees", OK, f"{len(ours)} goal worktree(s), each on its goal branch")


def _worktrees_folder(repo: Repo) -> Path:
    return repo.root / ".harness" / "worktrees"


def _goal_worktrees(repo: Repo) -> list[RegisteredWorktree]:
    """The registered worktrees that live in .harness/worktrees/."""
    folder = _worktrees_folder(repo)
    return [wt for wt in list_worktrees(repo) if wt.path.parent == folder]


def _stale(wt: RegisteredWorktree) -> str | None:
    if wt.prunable is None:
        return None
    return f"{wt.path} is a stale entry ({wt.prunable or 'its folder is gone'})"


def _off_branch(wt: RegisteredWorktree, prefix: str) -> str | None:
    """`harness run` refuses a goal whose worktree is not on the goal's branch (exit 3)."""
    expected = f"{prefix}{wt.path.name}"
    actual = (wt.branch or "").removeprefix("refs/heads/")
    if wt.prunable is not None or actual == expected:
        return None
    return f"{wt.path} is on {actual or 'a detached HEAD'}, not {expected}; harness run refuses it"


def _strays(repo: Repo, ours: list[RegisteredWorktree]) -> list[str]:
    """Folders in .harness/worktrees/ that git does not know: `harness run` cannot reuse them."""
    folder = _worktrees_folder(repo)
    if not folder.is_dir():
        return []
    registered = {wt.path.name for wt in ours}
    return [
        f"{p} is not a git worktree"
        for p in sorted(folder.iterdir())
        if p.is_dir() and p.name not in registered
    ]


def _locks(repo: Repo) -> Finding:
    folder = repo.common_dir / "harness" / "locks"
    files = sorted(folder.glob("*.lock")) if folder.is_dir() else []
    held = [f"{p.stem} by process {pid}" for p in files if (pid := lock_holder(p))]
    if not held:
        # A dead holder's flock is dropped by the kernel: a lock file alone is never stale.
        return Finding("locks", OK, f"{len(files)} lock file(s), none held")
    return Finding("locks", OK, f"held now: {', '.join(held)}")
