"""`harness ci`: the files that start `harness run` on a schedule (cron, systemd, GitHub).

Its commands parse, call `harness.commands.ci*` and exit with its code, as cli.py's do.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from harness.group import HarnessGroup, cwd, done, env, path_option


@click.group(cls=HarnessGroup)
def ci() -> None:
    """Write the files that start `harness run` on a schedule: cron, systemd, GitHub Actions."""


_EVERY = click.option(
    "--every",
    "every_minutes",
    type=int,
    default=None,
    metavar="MINUTES",
    help="Minutes between runs (default 30): a divisor of 60, or whole hours that divide a "
    "day (60 to 1440; 1440 is daily at 00:00).",
)
_AT = click.option(
    "--at", metavar="HH:MM", help="Run once a day at this time (machine-local), not --every."
)
_PUSH = click.option(
    "--push", "push", metavar="REMOTE", help="Run `harness run --push REMOTE` (several machines)."
)
_ENV_FILE = path_option(
    "--env-file",
    "env_file",
    "Where the run reads the notify config's variables (NAME='value' lines, outside the "
    "repository; default: notify.env beside the default secret file).",
)


@ci.command("github")
@click.option("--force", is_flag=True, help="Replace an existing .github/workflows/harness.yml.")
@click.option(
    "--schedule",
    "cron",
    default="*/30 * * * *",
    show_default=True,
    metavar="CRON",
    help="When GitHub starts the workflow: a 5-field cron expression, UTC.",
)
@click.option(
    "--install",
    metavar="SPEC",
    help=(
        "What the workflow pip-installs: git+https://…@<full commit>, or a requirements file "
        "with hashes (default: the commit this harness was installed from by git)."
    ),
)
@click.option("--matrix", is_flag=True, help="One job per goal (GitHub's matrix), then a summary.")
def ci_github(force: bool, cron: str, install: str | None, matrix: bool) -> None:
    """Write .github/workflows/harness.yml: every 30 minutes, one run at a time.

    Example: harness ci github --schedule '0 2 * * *' && harness secret new --print | gh secret set HARNESS_SECRET --env goal-harness
    """
    from harness.commands.ci_github import ci_github as run_ci_github

    done(run_ci_github(cwd(), sys.stdout, force, cron, install, matrix))


@ci.command("cron")
@_EVERY
@_AT
@_PUSH
@click.option(
    "--install",
    is_flag=True,
    help="Put the entry into your crontab (crontab -l / crontab -), replacing this "
    "repository's earlier entry in place.",
)
@_ENV_FILE
def ci_cron(every_minutes: int | None, **options: Any) -> None:
    """Print a crontab entry that runs `harness run` in this repository, or install it.

    Example: harness ci cron --at 02:00 --push origin --install
    """
    from harness.commands.ci import ci_cron as run_ci_cron

    # at, push, install, env_file: keyword parameters of the command function alike.
    done(run_ci_cron(cwd(), sys.stdout, every_minutes, env(), **options))


@ci.command("systemd")
@path_option("--dir", "directory", "Write the two unit files here (default: print them).")
@_EVERY
@_AT
@_PUSH
@click.option("--force", is_flag=True, help="Replace unit files that already exist in --dir.")
@_ENV_FILE
def ci_systemd(**options: Any) -> None:
    """Write goal-harness.service and goal-harness.timer (systemd user units).

    Example: harness ci systemd --dir ~/.config/systemd/user --every 30
    """
    from harness.commands.ci import ci_systemd as run_ci_systemd

    done(run_ci_systemd(cwd(), sys.stdout, env=env(), **options))
