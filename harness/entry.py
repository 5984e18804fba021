"""The command line's edges that need no click: what an error becomes (one line and an exit
code), and `harness run`'s plain forms parsed without importing click.

A scheduled `harness run` that finds every goal resting is a short process, and click's
import was a tenth of it (docs/specs/performance.md, "Fifth pass"). `plain_run` accepts
only the forms whose meaning is beyond doubt (goal ids, `--max-steps N`, `--push REMOTE`,
`--jobs N`, `--json`, each option once); anything else, `--help` and every mistake
included, goes to click, which says what is wrong as it always did.
"""

from __future__ import annotations

import errno
import os
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessError, Interrupted
from harness.record.visible import one_line

# A write the disk refused: a read-only file system, a full disk, a spent quota.
_DISK_ERRORS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def _crash_log(exc: BaseException) -> Path:
    import tempfile  # only a crash pays for these two
    import traceback

    fd, name = tempfile.mkstemp(prefix="harness-crash-", suffix=".log")
    with os.fdopen(fd, "w") as handle:
        handle.write("".join(traceback.format_exception(exc)))
    return Path(name)


def failure_code(exc: BaseException, echo: Callable[[str], None]) -> int | None:
    """One line for `exc` through `echo` and the exit code it means; None for what is not
    the harness's to report (it goes on up)."""
    if isinstance(exc, HarnessError):
        echo(f"harness: {one_line(exc)}")
        return exc.exit_code
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`harness replay | head`): stop quietly, like other tools.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's flush quiet
        return 141
    if isinstance(exc, Interrupted):
        echo(f"harness: stopped by {exc.name}; the goal is paused and the next run resumes it")
        return 128 + exc.signum
    if isinstance(exc, KeyboardInterrupt):
        echo("harness: interrupted")
        return 130
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:
        # Not a bug: the disk refused a write. Named in one line, no traceback.
        where = f" {os.fsdecode(exc.filename)!r}" if exc.filename is not None else ""
        echo(f"harness: cannot write{where}: {exc.strerror}")
        return 1
    if isinstance(exc, Exception):  # a bug: keep the traceback, show one line
        log = _crash_log(exc)
        echo(f"harness: internal error: {type(exc).__name__}: {one_line(exc)} (traceback in {log})")
        return 1
    return None


@dataclass(frozen=True)
class RunOption:
    """One option of `harness run`: cli.py makes it a click option, plain_run parses it."""

    flag: str  # "--max-steps"
    field: str  # the parameter's name, in click's params and in PlainRun
    kind: Literal["int", "text", "flag"]  # click: type=int, a string, is_flag
    help: str
    metavar: str | None = None
    default: int | None = None  # shown in --help when set

    def click_settings(self) -> dict[str, Any]:
        """click.option's keywords for it (entry never imports click)."""
        settings: dict[str, Any] = {"metavar": self.metavar, "help": self.help}
        if self.kind != "text":
            settings |= {"is_flag": True} if self.kind == "flag" else {"type": int}
        if self.default is not None:
            settings |= {"default": self.default, "show_default": True}
        return settings


# The one declaration of run's options (besides the goal ids and the hidden --serve-fd of
# a `run --jobs` worker, which plain_run leaves to click).
RUN_OPTIONS = (
    RunOption("--max-steps", "max_steps", "int", "Stop after this many steps in this invocation."),
    RunOption(
        "--push", "push", "text", "Coordinate with other runners through this remote.", "REMOTE"
    ),
    RunOption("--jobs", "jobs", "int", "Advance up to this many goals at once.", default=1),
    RunOption("--json", "as_json", "flag", "Print one JSON document instead of event lines."),
)


@dataclass(frozen=True)
class PlainRun:
    """`harness run` as click would hand it to the command."""

    goal_ids: tuple[str, ...] = ()
    max_steps: int | None = None
    push: str | None = None
    jobs: int = 1
    as_json: bool = False


_BY_FLAG = {option.flag: option for option in RUN_OPTIONS}
# What each field is when its option is not given, as click has it.
_UNSET = {o.field: False if o.kind == "flag" else o.default for o in RUN_OPTIONS}


def plain_run(argv: list[str]) -> PlainRun | None:
    """`argv` (without the program name) when it is `run` in a plain form, else None."""
    if not argv or argv[0] != "run":
        return None
    ids: list[str] = []
    given: dict[str, Any] = {}
    rest = iter(argv[1:])
    for arg in rest:
        if not arg.startswith("-"):
            ids.append(arg)
            continue
        name, eq, inline = arg.partition("=")
        option = _BY_FLAG.get(name)
        if option is None:
            return None  # --help, --serve-fd, `--`, anything unknown or short
        if option.kind == "flag":
            if eq:
                return None  # `--json=1`: click refuses it and says so
            value: Any = True
        else:
            text = inline if eq else next(rest, "-")
            if not text or text.startswith("-") or (option.kind == "int" and not _whole(text)):
                return None  # a missing or odd value: click names the problem
            value = int(text) if option.kind == "int" else text
        if option.field in given:
            return None  # given twice: click's rule, not ours
        given[option.field] = value
    return PlainRun(goal_ids=tuple(ids), **(_UNSET | given))


def _whole(text: str) -> bool:
    return text.isascii() and text.isdigit()


def run_plain(plain: PlainRun, held: Mapping[str, str]) -> int:
    """`harness run` in a plain form, as the click command runs it, errors included."""
    env = ChainMap(dict(held), os.environ)

    def echo(line: str) -> None:
        sys.stderr.write(line + "\n")

    try:
        from harness.commands.run import run

        return run(
            Path.cwd(),
            list(plain.goal_ids),
            plain.max_steps,
            plain.push,
            env,
            jobs=plain.jobs,
            as_json=plain.as_json,
        )
    except BaseException as exc:
        code = failure_code(exc, echo)
        if code is None:
            raise
        return code
