"""`harness ci github|cron|systemd`: the files that run `harness run` on a schedule.

Each generator only writes (or prints) text for a human to read, commit or install; none
of them touches a scheduler. What each choice is for: docs/guide/scheduling.md.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.errors import InvalidInput
from harness.loop.control import CONFIG_PATH
from harness.model.config import parse_config
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo, run_git
from harness.trust.secret import ENV_SECRET_FILE, default_secret_file

WORKFLOW_PATH = ".github/workflows/harness.yml"
SERVICE_NAME = "goal-harness.service"
TIMER_NAME = "goal-harness.timer"
DEFAULT_EVERY_MINUTES = 30
# Intervals that repeat evenly: cron's */N and systemd's 0/N restart at each hour (or day),
# so any other N would give a short gap once an hour.
MINUTE_STEPS = tuple(n for n in range(1, 60) if 60 % n == 0)
HOUR_STEPS = tuple(n for n in range(1, 25) if 24 % n == 0)
EVERY_EXPECTED = (
    f"minutes that divide an hour ({', '.join(map(str, MINUTE_STEPS))}) or whole hours that "
    f"divide a day, in minutes ({', '.join(str(h * 60) for h in HOUR_STEPS)})"
)
# systemd splits these values at blanks and treats quotes, backslashes, `$` and `%` specially.
_SYSTEMD_UNSAFE = re.compile(r"[\s\"'\\$%;\x00-\x1f\x7f]")


def ci_github(
    cwd: Path, out: TextIO, force: bool, install: str | None = None, matrix: bool = False
) -> int:
    """Write .github/workflows/harness.yml; refuse to replace one unless `force`."""
    spec = install_spec(install)
    root = Repo.discover(cwd).root
    target = root / WORKFLOW_PATH
    if target.exists() and not force:
        raise InvalidInput(
            f"{WORKFLOW_PATH}: already exists (expected no file; pass --force to replace it)"
        )
    prefix = _branch_prefix(root)
    if matrix:
        from harness.commands.ci_matrix import github_matrix_workflow

        text = github_matrix_workflow(prefix, spec)
    else:
        text = github_workflow(prefix, spec)
    atomic_write(target, text.encode())
    out.write(f"wrote {WORKFLOW_PATH}\n")
    out.write(
        "next: add the repository secret HARNESS_SECRET (a value from "
        "`harness secret new --print`), then commit the workflow\n"
    )
    return 0


def ci_cron(
    cwd: Path, out: TextIO, every_minutes: int, env: Mapping[str, str] | None = None
) -> int:
    """Print a crontab entry (with comments) that runs `harness run` in this repository."""
    env = os.environ if env is None else env
    repo = Repo.discover(cwd)
    secret_file = _secret_file(env)
    line = cron_line(repo, every_minutes, secret_file, harness_command())
    out.write(f"# goal-harness for {repo.root}, every {_every_text(every_minutes)}\n")
    out.write(
        f"# install: (crontab -l 2>/dev/null; harness ci cron --every {every_minutes}) | crontab -\n"
    )
    if not secret_file.is_file():
        out.write(f"# note: {secret_file} does not exist yet: run `harness secret new`\n")
    out.write(line + "\n")
    return 0


def ci_systemd(
    cwd: Path,
    out: TextIO,
    directory: Path | None,
    every_minutes: int,
    env: Mapping[str, str] | None = None,
    force: bool = False,
) -> int:
    """Write goal-harness.service and .timer into `directory`, or print both."""
    env = os.environ if env is None else env
    repo = Repo.discover(cwd)
    units = {
        SERVICE_NAME: systemd_service(repo, _secret_file(env), harness_command()),
        TIMER_NAME: systemd_timer(repo.root, every_minutes),
    }
    if directory is None:
        for name, text in units.items():
            out.write(f"# --- {name}\n{text}\n")
    else:
        _write_units(directory.expanduser(), units, force, out)
    out.write(
        f"next: systemctl --user daemon-reload && systemctl --user enable --now {TIMER_NAME}\n"
    )
    return 0


def _write_units(directory: Path, units: Mapping[str, str], force: bool, out: TextIO) -> None:
    existing = [name for name in units if (directory / name).exists()]
    if existing and not force:
        raise InvalidInput(
            f"{directory / existing[0]}: already exists (expected no file; pass --force to replace it)"
        )
    for name, text in units.items():
        atomic_write(directory / name, text.encode())
        out.write(f"wrote {directory / name}\n")


# --- shared -----------------------------------------------------------------------------


def run_words(repo: Repo) -> list[str]:
    """`run`, with `--push REMOTE` when the repository has a remote to follow: `origin`, else
    its only remote. Each pass then fetches the control branch (new approvals and decisions)
    and the goal branches first, and pushes what it does (remote.md)."""
    names = run_git(["remote"], repo.root).stdout.decode().split()
    remote = "origin" if "origin" in names else names[0] if len(names) == 1 else None
    if remote is None or _SYSTEMD_UNSAFE.search(remote) or "%" in remote:
        return ["run"]
    return ["run", "--push", remote]


def harness_command() -> list[str]:
    """The absolute command for `harness`: schedulers run with a minimal PATH."""
    beside = Path(sys.executable).parent / "harness"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("harness")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "harness"]


def _secret_file(env: Mapping[str, str]) -> Path:
    """The file `harness run` will read: HARNESS_SECRET_FILE if set here, else the default."""
    named = env.get(ENV_SECRET_FILE)
    return Path(named).expanduser().absolute() if named else default_secret_file(env).absolute()


def _branch_prefix(root: Path) -> str:
    path = root / CONFIG_PATH
    return parse_config(path.read_bytes() if path.is_file() else None, CONFIG_PATH).branch_prefix


def schedule(every_minutes: int) -> tuple[str, str]:
    """(cron expression, systemd OnCalendar) for an interval that repeats evenly."""
    if every_minutes in MINUTE_STEPS:
        return f"*/{every_minutes} * * * *", f"*:0/{every_minutes}"
    hours, rest = divmod(every_minutes, 60)
    if rest == 0 and hours in HOUR_STEPS:
        return f"0 */{hours} * * *", f"0/{hours}:00"
    raise InvalidInput(f"--every: {every_minutes} (expected {EVERY_EXPECTED})")


def _every_text(every_minutes: int) -> str:
    count, unit = (every_minutes, "minute") if every_minutes % 60 else (every_minutes // 60, "hour")
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


# --- GitHub Actions ---------------------------------------------------------------------


def github_workflow(branch_prefix: str, install: str | None = None) -> str:
    refs = f"refs/heads/{branch_prefix}"
    spec = install_spec(install)
    text = _WORKFLOW.replace("@REFS@", refs).replace("@PREFIX@", branch_prefix)
    return text.replace("@INSTALL@", spec)


# A requirement (`goal-harness==0.1.0`) or a pip URL (`git+https://…@<tag>`): one shell word
# inside double quotes in a YAML plain scalar, so nothing that could end either.
_INSTALL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],=<>!~+:/@#%]*")


def install_spec(install: str | None) -> str:
    """What the workflow installs: `install`, else this harness's own version, pinned."""
    from harness import __version__

    spec = f"goal-harness=={__version__}" if install is None else install
    if not _INSTALL_RE.fullmatch(spec):
        raise InvalidInput(
            f"--install: {spec!r} is not an install spec (expected a pinned requirement such "
            "as goal-harness==0.1.0, or a pip URL such as git+https://…/goal-harness@v0.1.0, "
            "without blanks, quotes or $)"
        )
    return spec


# Written as text, not dumped from a dict, so that the comments reach the reader. The run
# step treats 4 (another runner holds every goal) as success; every other non-zero exit
# fails the job. The summary step runs even after a failure, because that is when it is
# read.
_WORKFLOW = """\
# goal-harness: advance the approved goals on a schedule (made by `harness ci github`).
# Needs the repository secret HARNESS_SECRET (a value from `harness secret new --print`).
# Guide: docs/guide/scheduling.md in goal-harness.
name: goal-harness

on:
  schedule:
    - cron: "*/30 * * * *"  # every 30 minutes, UTC; GitHub may start scheduled runs late
  workflow_dispatch: {}

# One run at a time. A new run waits for the live one rather than cancelling it: a
# cancelled step is resumed, and possibly run again, by the next run.
concurrency:
  group: goal-harness
  cancel-in-progress: false

permissions:
  contents: write  # the run commits to, and pushes, the goal branches @PREFIX@<id>

jobs:
  run:
    runs-on: ubuntu-latest
    # A bound on a stuck job; each step also has its own timeout in the goal file.
    timeout-minutes: 360
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # full history: goal branches share it with the control branch
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install goal-harness
        # Pinned (`harness ci github --install SPEC`): this job holds contents: write and
        # the secret, so it installs exactly this, never whatever a name resolves to today.
        run: python -m pip install "@INSTALL@"
      - name: Install bubblewrap
        # Every step runs contained under bwrap (`sandbox: auto`; docs/specs/sandbox.md).
        # Ubuntu 24.04 lets AppArmor forbid the user namespaces bwrap makes; lift that on
        # this throw-away runner, or `sandbox: required` refuses to run.
        shell: bash
        run: |
          command -v bwrap >/dev/null || { sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap; }
          if [ "$(sysctl -n kernel.apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
            sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
          fi
      - name: Fetch goal branches
        # Every goal branch becomes a local branch, so the summary shows every goal. One
        # that exists here already is left alone: `harness run --push` brings it to the
        # remote's state fast-forward-only.
        shell: bash
        run: |
          git fetch --no-tags --prune origin "+@REFS@*:refs/remotes/origin/@PREFIX@*"
          for ref in $(git for-each-ref --format='%(refname:lstrip=3)' "refs/remotes/origin/@PREFIX@"); do
            git show-ref -q --verify "refs/heads/$ref" || git branch -q --no-track "$ref" "origin/$ref"
          done
      # The secret goes into a file only this job's user can read, by a step that ends at
      # once; the steps that stay alive as the harness's parent never hold it.
      - name: Write the secret to a file
        shell: bash
        env:
          HARNESS_SECRET: ${{ secrets.HARNESS_SECRET }}
        run: |
          umask 077
          printf '%s\\n' "$HARNESS_SECRET" > "$RUNNER_TEMP/goal-harness-secret"
      - name: Run goals
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
        run: |
          code=0
          harness run --push origin || code=$?
          if [ "$code" -ne 0 ] && [ "$code" -ne 4 ]; then
            echo "::error::harness run exited $code (1 internal error, 2 invalid input, 3 trust failure)"
            exit "$code"
          fi
      - name: Summary
        if: always()
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
        run: |
          {
            echo "## goal-harness status"
            echo
            echo '```text'
            harness status || echo "(harness status exited $?)"
            echo '```'
            for ref in $(git for-each-ref --format='%(refname:lstrip=2)' "@REFS@"); do
              echo
              harness replay "${ref#@PREFIX@}" --format md || echo "(no report for $ref)"
            done
          } >> "$GITHUB_STEP_SUMMARY"
      - name: Remove the secret file
        if: always()
        shell: bash
        run: rm -f "$RUNNER_TEMP/goal-harness-secret"
"""


# --- cron -------------------------------------------------------------------------------


def cron_line(repo: Repo, every_minutes: int, secret_file: Path, command: list[str]) -> str:
    """One crontab line: cd into the repository, run, append everything to a log.

    No `flock` around it: the harness takes a lock per goal, so a tick that starts while
    a long run is still going skips the busy goal and moves any other goal on.
    """
    # The shell opens the log before harness runs, so its folder must already exist.
    log = repo.harness_dir() / "cron.log"
    for path in (repo.root, secret_file, log, *map(Path, command)):
        _cron_safe(path)
    when, _ = schedule(every_minutes)
    run = " ".join(shlex.quote(word) for word in [*command, *run_words(repo)])
    return (
        f"{when} cd {shlex.quote(str(repo.root))} && "
        f"{ENV_SECRET_FILE}={shlex.quote(str(secret_file))} {run} "
        f">> {shlex.quote(str(log))} 2>&1"
    )


def _cron_safe(path: Path) -> None:
    # cron turns an unescaped % into a newline, and one entry is one line.
    if "%" in str(path) or "\n" in str(path):
        raise InvalidInput(
            f"{path}: a path in a crontab line cannot hold '%' or a newline (expected a plain path)"
        )


# --- systemd ----------------------------------------------------------------------------


def systemd_service(repo: Repo, secret_file: Path, command: list[str]) -> str:
    root = repo.root
    writable = [root] if repo.common_dir.is_relative_to(root) else [root, repo.common_dir]
    for path in (*writable, secret_file, *map(Path, command)):
        _systemd_safe(path)
    return _SERVICE.format(
        root=root,
        secret_file=secret_file,
        exec_start=" ".join([*command, *run_words(repo)]),
        writable=" ".join(map(str, writable)),
        secret_env=ENV_SECRET_FILE,
    )


def systemd_timer(root: Path, every_minutes: int) -> str:
    _, calendar = schedule(every_minutes)
    return _TIMER.format(
        root=root, every=_every_text(every_minutes), calendar=calendar, service=SERVICE_NAME
    )


def _systemd_safe(path: Path) -> None:
    if _SYSTEMD_UNSAFE.search(str(path)):
        raise InvalidInput(
            f"{path}: a path in a systemd unit here cannot hold blanks, quotes, '\\', '$', "
            "'%' or ';' (expected a plain path; a symlink without them will do)"
        )


# ProtectSystem=strict makes the whole file system read-only for the run, home included;
# ReadWritePaths gives back the repository (worktrees, ledger, locks in .git). An agent
# that keeps state elsewhere needs that folder added too.
_SERVICE = """\
# goal-harness for {root} (made by `harness ci systemd`)
[Unit]
Description=goal-harness: advance the approved goals of {root}

[Service]
Type=oneshot
WorkingDirectory={root}
Environment={secret_env}={secret_file}
ExecStart={exec_start}
# 4: another process holds every goal; it will be moved on by that process.
SuccessExitStatus=4
# A run lasts as long as its steps; each step has its own timeout in the goal file.
TimeoutStartSec=infinity
# Hardening that leaves git and the harness working. The file system is read-only apart
# from the paths below: add any folder your agent writes to, e.g. %h/.cache.
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ReadWritePaths={writable}
RestrictSUIDSGID=yes
LockPersonality=yes
"""

_TIMER = """\
# goal-harness for {root} (made by `harness ci systemd`)
[Unit]
Description=Run goal-harness for {root} every {every}

[Timer]
OnCalendar={calendar}
# Run once at start-up when a run was missed while the machine was off or asleep.
Persistent=true
Unit={service}

[Install]
WantedBy=timers.target
"""
