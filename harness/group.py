"""The `harness` command group: the one error tree as one line and its exit code, a hint
for a command that lives under another name, and `--json` for the commands that print a
few lines about one act (commands/jsonout.py)."""

from __future__ import annotations

import os
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click

from harness.entry import failure_code

F = TypeVar("F", bound=Callable[..., Any])

# HARNESS_SECRET, HARNESS_SECRET_FILE, HARNESS_KEY_PASSPHRASE and HARNESS_RUNNER_KEY_FILE as
# main() found them (harness.trust.secret.take_from_environment).
HELD: dict[str, str] = {}


def env() -> Mapping[str, str]:
    """The environment the commands read: os.environ and the variables main() holds."""
    return ChainMap(HELD, os.environ)


def done(code: int) -> None:
    click.get_current_context().exit(code)


def cwd() -> Path:
    return Path.cwd()


def path_option(flag: str, name: str, help: str, required: bool = False) -> Callable[[F], F]:
    """An option that names a file or folder, handed to the command as a Path."""
    return click.option(flag, name, required=required, type=click.Path(path_type=Path), help=help)


# Names people type for a command that lives under `ci`.
ELSEWHERE = {
    "cron": "ci cron",
    "systemd": "ci systemd",
    "github": "ci github",
    "matrix": "ci github --matrix",
}


class HarnessGroup(click.Group):
    """Turns the one error tree into one line and its exit code (`entry.failure_code`)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BaseException as exc:
            code = failure_code(exc, lambda line: click.echo(line, err=True))
            if code is None:
                raise
            ctx.exit(code)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in ELSEWHERE and self.get_command(ctx, name) is None:
            ctx.fail(f"No such command '{name}': did you mean `harness {ELSEWHERE[name]}`?")
        return super().resolve_command(ctx, args)


JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def emit(as_json: bool, name: str, goal: Any, run: Callable[[TextIO], int]) -> None:
    """Run the command, its lines on stdout or with --json one document of them, and exit
    with its code."""
    if as_json:
        from harness.commands.jsonout import as_document

        code = as_document(run, sys.stdout, name, goal)
    else:
        code = run(sys.stdout)
    click.get_current_context().exit(code)
