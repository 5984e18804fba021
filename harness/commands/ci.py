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
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.commands.crontab import cron_begin, cron_end, install_cron_block
from harness.commands.notify_env import NotifyEnv, notify_env
from harness.commands.reviewer import recorded_goals
from harness.errors import InvalidInput
from harness.loop.contain.place import bind_sources, homes_root
from harness.loop.control import CONFIG_PATH
from harness.model.config import Config, parse_config
from harness.record.visible import block, line
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo, run_git
from harness.trust.secret import ENV_SECRET_FILE, default_secret_file

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
# Where a scheduler's own PATH would find the usual tools; kept after the user's PATH.
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
_AT = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
# systemd splits these values at blanks and treats quotes, backslashes, `$` and `%` specially.
_SYSTEMD_UNSAFE = re.compile(r"[\s\"'\\$%;\x00-\x1f\x7f]")


@dataclass(frozen=True)
class When:
    """When a scheduler starts `harness run`: the same moment in cron and in systemd."""

    cron: str
    calendar: str
    text: str  # "every 10 minutes", "daily at 02:00"
    option: str  # the generator's option that gives it again: "--every 10", "--at 02:00"


def when(every_minutes: int | None, at: str | None) -> When:
    """`--every MINUTES` (default 30) or `--at HH:MM` (daily, machine-local time)."""
    if every_minutes is not None and at is not None:
        raise InvalidInput(f"--at: {at} given with --every (expected one of them, not both)")
    if at is not None:
        matched = _AT.match(at)
        if matched is None:
            raise InvalidInput(f"--at: {at} (expected a time of day HH:MM, 00:00 to 23:59)")
        hour, minute = int(matched[1]), int(matched[2])
        return When(
            f"{minute} {hour} * * *",
            f"*-*-* {hour:02}:{minute:02}:00",
            f"daily at {hour:02}:{minute:02}",
            f"--at {hour:02}:{minute:02}",
        )
    every = DEFAULT_EVERY_MINUTES if every_minutes is None else every_minutes
    cron, calendar = schedule(every)
    text = "daily at 00:00" if every == 24 * 60 else f"every {_every_text(every)}"
    return When(cron, calendar, text, f"--every {every}")


def ci_cron(
    cwd: Path,
    out: TextIO,
    every_minutes: int | None = None,
    env: Mapping[str, str] | None = None,
    *,
    at: str | None = None,
    push: str | None = None,
    install: bool = False,
    env_file: Path | None = None,
) -> int:
    """Print the crontab block that runs `harness run` here, or (`install`) put it into
    the user's crontab, replacing this repository's earlier block in place. The notify
    config's variables come from `env_file` (commands/notify_env.py)."""
    env = os.environ if env is None else env
    repo = Repo.discover(cwd)
    moment = when(every_minutes, at)
    push = default_push(repo, push)
    secret_file = _secret_file(env)
    command = harness_command()
    notified = notify_env(_config(repo.root), repo.root, env, env_file)
    cron = cron_line(
        repo, moment.cron, secret_file, command, path=run_path(env), push=push, notify=notified
    )
    again = shlex.join([*command, "ci", "cron", *moment.option.split()])
    again += f" --push {shlex.quote(push)}" if push else ""
    again += f" --env-file {shlex.quote(str(notified.file))}" if env_file and notified else ""
    notes = [] if secret_file.is_file() else [_no_secret_yet(repo, secret_file)]
    notes += notified.notes() if notified is not None else []
    entry = [
        cron_begin(repo.root),
        f"# {moment.text}; install or update: cd {shlex.quote(str(repo.root))} && {again} --install",
        *([f"# {notified.comment()}"] if notified is not None else []),
        *(f"# note: {note}" for note in notes),
        cron,
        cron_end(repo.root),
    ]
    if not install:
        out.write(block("\n".join(entry) + "\n"))
        return 0
    replaced = install_cron_block(repo.root, entry)
    verb = "replaced the earlier entry" if replaced else "added the entry"
    out.write(line(f"crontab: {verb} for {repo.root} ({moment.text})"))
    return 0


def ci_systemd(
    cwd: Path,
    out: TextIO,
    directory: Path | None,
    every_minutes: int | None,
    env: Mapping[str, str] | None = None,
    force: bool = False,
    *,
    at: str | None = None,
    push: str | None = None,
    env_file: Path | None = None,
) -> int:
    """Write goal-harness.service and .timer into `directory`, or print both. The notify
    config's variables come from `env_file` (commands/notify_env.py)."""
    env = os.environ if env is None else env
    repo = Repo.discover(cwd)
    moment = when(every_minutes, at)
    push = default_push(repo, push)
    command = [*harness_command(), "run", *(["--push", push] if push else [])]
    notified = notify_env(_config(repo.root), repo.root, env, env_file)
    units = {
        SERVICE_NAME: systemd_service(repo, _secret_file(env), command, env, notified),
        TIMER_NAME: systemd_timer(repo.root, moment),
    }
    if directory is None:
        for name, text in units.items():
            out.write(block(f"# --- {name}\n{text}\n"))
    else:
        _write_units(directory.expanduser(), units, force, out)
    for note in notified.notes() if notified is not None else []:
        out.write(line(f"note: {note}"))
    out.write(
        line(f"next: systemctl --user daemon-reload && systemctl --user enable --now {TIMER_NAME}")
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
        out.write(line(f"wrote {directory / name}"))


# --- shared -----------------------------------------------------------------------------


def default_push(repo: Repo, push: str | None) -> str | None:
    """`push` if given, else the remote a scheduled run follows when the repository has one:
    `origin`, else its only remote. Each pass then fetches the control branch (new approvals
    and decisions) and the goal branches first, and pushes what it does (remote.md)."""
    if push is not None:
        return push
    names = run_git(["remote"], repo.root).stdout.decode().split()
    remote = "origin" if "origin" in names else names[0] if len(names) == 1 else None
    if remote is None or _SYSTEMD_UNSAFE.search(remote) or "%" in remote:
        return None
    return remote


def harness_command() -> list[str]:
    """The absolute command for `harness`: schedulers run with a minimal PATH."""
    beside = Path(sys.executable).parent / "harness"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("harness")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "harness"]


def run_path(env: Mapping[str, str]) -> list[str]:
    """The PATH a scheduled run gets: the bin folder of the Python running this generator
    (a venv's: its `python` has the project's packages, for a judge's `python -m pytest`),
    then the absolute entries of PATH here, then the system folders."""
    entries = [str(Path(sys.executable).parent), *env.get("PATH", "").split(os.pathsep)]
    kept = [e for e in entries if e and Path(e).is_absolute()]
    return list(dict.fromkeys([*kept, *SYSTEM_PATH]))


def _secret_file(env: Mapping[str, str]) -> Path:
    """The file `harness run` will read: HARNESS_SECRET_FILE if set here, else the default."""
    named = env.get(ENV_SECRET_FILE)
    return Path(named).expanduser().absolute() if named else default_secret_file(env).absolute()


def _config(root: Path) -> Config:
    path = root / CONFIG_PATH
    return parse_config(path.read_bytes() if path.is_file() else None, CONFIG_PATH)


def branch_prefix(root: Path) -> str:
    return _config(root).branch_prefix


def schedule(every_minutes: int) -> tuple[str, str]:
    """(cron expression, systemd OnCalendar) for an interval that repeats evenly."""
    if every_minutes in MINUTE_STEPS:
        return f"*/{every_minutes} * * * *", f"*:0/{every_minutes}"
    hours, rest = divmod(every_minutes, 60)
    if hours == 24 and rest == 0:  # `0 */24` would be read as "at hour 0 of each day" anyway
        return "0 0 * * *", "*-*-* 00:00:00"
    if rest == 0 and hours in HOUR_STEPS:
        return f"0 */{hours} * * *", f"0/{hours}:00"
    raise InvalidInput(f"--every: {every_minutes} (expected {EVERY_EXPECTED})")


def _every_text(every_minutes: int) -> str:
    count, unit = (every_minutes, "minute") if every_minutes % 60 else (every_minutes // 60, "hour")
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


# --- cron -------------------------------------------------------------------------------


def cron_line(
    repo: Repo,
    when: str,
    secret_file: Path,
    command: list[str],
    *,
    path: list[str],
    push: str | None = None,
    notify: NotifyEnv | None = None,
) -> str:
    """One crontab line: cd into the repository, exec the harness with PATH set, append
    everything to a log. It names the secret's file, never the secret; and the notify
    variables' file, which its shell reads (never their values).

    No `flock` around it: the harness takes a lock per goal, so a tick that starts while
    a long run is still going skips the busy goal and moves any other goal on.
    """
    # The shell opens the log before harness runs, so its folder must already exist.
    log = repo.harness_dir() / "cron.log"
    env_file = [notify.file] if notify is not None else []
    for item in (repo.root, secret_file, log, *env_file, *map(Path, command), *map(Path, path)):
        _cron_safe(item)
    if push is not None:
        _cron_safe(Path(push))
    words = [*command, "run", *(["--push", push] if push else [])]
    # `exec`: cron's shell becomes the harness instead of staying alive as its parent.
    return (
        f"{when} cd {shlex.quote(str(repo.root))} && "
        f"{notify.cron_words() if notify is not None else ''}"
        f"PATH={shlex.quote(os.pathsep.join(path))} "
        f"{ENV_SECRET_FILE}={shlex.quote(str(secret_file))} exec {shlex.join(words)} "
        f">> {shlex.quote(str(log))} 2>&1"
    )


def _cron_safe(path: Path) -> None:
    # cron turns an unescaped % into a newline, and one entry is one line.
    if "%" in str(path) or "\n" in str(path):
        raise InvalidInput(
            f"{path}: a path in a crontab line cannot hold '%' or a newline (expected a plain path)"
        )


# --- systemd ----------------------------------------------------------------------------


def systemd_service(
    repo: Repo,
    secret_file: Path,
    command: list[str],
    env: Mapping[str, str],
    notify: NotifyEnv | None = None,
) -> str:
    """The service; `command` is the whole ExecStart (`harness run [--push R]`). Writable:
    the repository (and its .git), the per-goal homes the sandbox gives each goal's steps
    (made here: a ReadWritePaths entry must exist), and each of the config's `rw:`
    `sandbox_binds` (`-`: left out while missing, as the sandbox's --bind-try); a
    read-only bind stays read-only here too."""
    root = repo.root
    writable = [root] if repo.common_dir.is_relative_to(root) else [root, repo.common_dir]
    homes = homes_root(env)
    writable.append(homes)
    binds = bind_sources([b for b in _config(root).sandbox_binds if b.writable], env)
    path = run_path(env)
    env_file = [notify.file] if notify is not None else []
    for item in (*writable, *binds, secret_file, *env_file, *map(Path, command), *map(Path, path)):
        _systemd_safe(item)
    homes.mkdir(parents=True, exist_ok=True, mode=0o700)
    return _SERVICE.format(
        root=root,
        secret_file=secret_file,
        path=os.pathsep.join(path),
        exec_start=" ".join(command),
        writable=" ".join([*map(str, writable), *(f"-{item}" for item in binds)]),
        secret_env=ENV_SECRET_FILE,
        notify_env=_environment_file(notify),
    )


def _environment_file(notify: NotifyEnv | None) -> str:
    """`-`: a missing file leaves the run going (its notifications fail, naming the
    variable); systemd reads the file as the user before the service's sandbox applies."""
    if notify is None:
        return ""
    return f"# {notify.comment()}\nEnvironmentFile=-{notify.file}\n"


def systemd_timer(root: Path, moment: When) -> str:
    return _TIMER.format(
        root=root, every=moment.text, calendar=moment.calendar, service=SERVICE_NAME
    )


def _systemd_safe(path: Path) -> None:
    if _SYSTEMD_UNSAFE.search(str(path)):
        raise InvalidInput(
            f"{path}: a path in a systemd unit here cannot hold blanks, quotes, '\\', '$', "
            "'%' or ';' (expected a plain path; a symlink without them will do)"
        )


# ProtectSystem=strict makes the whole file system read-only for the run, home included;
# ReadWritePaths gives back the repository (worktrees, ledger, locks in .git), the goals'
# homes and the sandbox's binds. Every option here leaves bwrap (the sandbox every step
# runs in) working: docs/guide/scheduling.md says which options would not, and why.
_SERVICE = """\
# goal-harness for {root} (made by `harness ci systemd`)
[Unit]
Description=goal-harness: advance the approved goals of {root}

[Service]
Type=oneshot
WorkingDirectory={root}
Environment={secret_env}={secret_file}
# The PATH of `harness ci systemd`'s user, so steps find the same python and tools.
Environment=PATH={path}
{notify_env}ExecStart={exec_start}
# 4: another process holds every goal; it will be moved on by that process.
SuccessExitStatus=4
# A run lasts as long as its steps; each step has its own timeout in the goal file.
TimeoutStartSec=infinity
# A stop is the harness's to handle: SIGTERM to it alone, which ends its step's processes,
# records the stop and exits 143; whatever is left after TimeoutStopSec is then killed.
KillMode=mixed
# Hardening that leaves git, the harness and its bubblewrap sandbox working. The file
# system is read-only apart from the paths below: the repository, the goals' homes, the
# config's sandbox_binds. No RestrictNamespaces= or SystemCallFilter=: the sandbox makes
# user, mount, PID, IPC and network namespaces and mounts its own /proc.
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=read-only
ReadWritePaths={writable}
RestrictSUIDSGID=yes
LockPersonality=yes
"""

_TIMER = """\
# goal-harness for {root} (made by `harness ci systemd`)
[Unit]
Description=Run goal-harness for {root} {every}

[Timer]
OnCalendar={calendar}
# Run once at start-up when a run was missed while the machine was off or asleep.
Persistent=true
Unit={service}

[Install]
WantedBy=timers.target
"""


def _no_secret_yet(repo: Repo, secret_file: Path) -> str:
    if recorded_goals(repo):  # a clone joining runners that already have records
        return f"{secret_file} does not exist yet: copy the runner's secret there"
    return f"{secret_file} does not exist yet: run `harness secret new`"
