"""Where a step's program is, and whether a contained step can reach it (sandbox.md,
"A program the sandbox hides").

A program found on the runner's PATH may still be out of a contained step's sight: under
/tmp (each step gets an empty one), in a hidden folder (the goals' homes, `~/.ssh`, …), or
behind an interpreter that is. What hides it is read from the very bwrap command line a
build gets (`sandbox.bwrap_argv`): the last mount over a path decides what the step sees
there, so this never disagrees with the sandbox about what it shows.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import Sandbox, bwrap_argv

# bwrap options that mount something, and how many paths each takes (the last is where).
_MOUNTS = {
    "--ro-bind": 2,
    "--bind": 2,
    "--ro-bind-try": 2,
    "--bind-try": 2,
    "--tmpfs": 1,
    "--dev": 1,
    "--proc": 1,
}
_WITH_VALUE = {"--chdir", "--uid", "--gid", "--cap-drop"}
# The options without a value `bwrap_argv` writes (tests/loop/test_reach.py holds the three
# tables to what it writes, so a new option cannot be misread as a mount's path).
FLAGS = frozenset(
    {"--unshare-pid", "--unshare-ipc", "--unshare-user", "--unshare-net", "--die-with-parent"}
)
OPTIONS = frozenset({*_MOUNTS, *_WITH_VALUE, *FLAGS})
_SHEBANG_BYTES = 256


@dataclass(frozen=True)
class Mount:
    source: Path | None  # None: a fresh file system (a tmpfs, /dev, /proc)
    target: Path

    @property
    def shows(self) -> bool:
        """Whether what lies below this mount is, for the step, what it is for the runner."""
        return self.source == self.target


@dataclass(frozen=True)
class Hidden:
    """A path out of a contained step's sight, the folder that hides it and what that is."""

    path: Path
    folder: Path
    what: str
    interpreter: bool = False  # `path` is the program's `#!` interpreter, not the program

    def describe(self) -> str:
        if self.what == "/tmp":
            return "/tmp is empty in the sandbox"
        return f"{self.folder} ({self.what}) is hidden in the sandbox"

    def fix(self) -> str:
        """What the owners can do: show /tmp's folder by a bind, or install it elsewhere
        (a hidden folder cannot be shown: `sandbox_binds` refuses it)."""
        if self.what == "/tmp":
            shown = self.path.parent
            return (
                f"add {shown} to sandbox_binds in .harness/config.yaml, or install it outside /tmp"
            )
        return f"install it outside {self.folder}"


def locate(program: str, cwd: Path, path_var: str | None) -> Path | None:
    """Where `program` (a step's first word) is for the runner: a name with a slash is a
    path (relative to `cwd`), any other is looked up on `path_var`, as execvp does."""
    if "/" in program:
        found = cwd / program
        return found if found.exists() else None
    which = shutil.which(program, path=path_var if path_var is not None else os.defpath)
    return Path(which) if which is not None else None


def interpreter(path: Path) -> Path | None:
    """The interpreter a `#!` line names, when `path` starts with one."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    return Path(os.fsdecode(words[0])) if words else None


def mounts(argv: Sequence[str]) -> list[Mount]:
    """The mounts of a bwrap command line, in order, up to its `--`."""
    found: list[Mount] = []
    index = 1
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        count = _MOUNTS.get(option, 1 if option in _WITH_VALUE else 0)
        values = argv[index + 1 : index + 1 + count]
        if option in _MOUNTS:
            source = Path(values[0]).resolve() if count == 2 else None
            found.append(Mount(source, Path(values[-1]).resolve()))
        index += 1 + count
    return found


def hiding_mount(found: Sequence[Mount], path: Path) -> Mount | None:
    """The mount that hides `path` from the step (None: the step sees it as the runner)."""
    over = [mount for mount in found if path.is_relative_to(mount.target)]
    last = over[-1] if over else None
    return None if last is None or last.shows else last


def hidden(sandbox: Sandbox, place: Place, program: Path, network: bool = True) -> Hidden | None:
    """What keeps a contained build (with or without `network`) from `program` or its
    interpreter, if anything; None also when steps are not contained."""
    if not sandbox.on or sandbox.bwrap is None:
        return None
    argv = bwrap_argv(
        sandbox.bwrap, place, ["true"], work=place.worktree, scratch=None, network=network
    )
    found = mounts(argv)
    names = {folder.resolve(): what for folder, what in place.hidden_named()}
    names[Path("/tmp").resolve()] = "/tmp"
    for path, is_interpreter in _needed(program):
        mount = hiding_mount(found, path)
        if mount is not None:
            what = names.get(mount.target, str(mount.target))
            return Hidden(path, mount.target, what, is_interpreter)
    return None


def _needed(program: Path) -> list[tuple[Path, bool]]:
    """The paths a program's start needs: itself, where its links lead, its interpreter."""
    real = program.resolve()
    script = interpreter(real)
    paths = {program.absolute(): False, real: False}
    if script is not None:
        paths.setdefault(script, True)
        paths.setdefault(script.resolve(), True)
    return list(paths.items())


def hidden_folders(
    sandbox: Sandbox, place: Place, paths: Sequence[Path], network: bool = True
) -> list[Path]:
    """Which of `paths` a contained step (not a build: on a throw-away layer) cannot see as
    the runner does; [] when steps are not contained."""
    if not sandbox.on or sandbox.bwrap is None:
        return []
    argv = bwrap_argv(
        sandbox.bwrap, place, ["true"], work=place.worktree, scratch=None, network=network
    )
    found = mounts(argv)
    return [path for path in paths if hiding_mount(found, path.resolve()) is not None]
