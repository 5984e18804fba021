"""The host's Unix sockets a contained step must not connect to (docs/specs/sandbox.md,
"Sockets").

A connect() to a file-system socket needs no write permission on a read-only mount, so a
step's read-only view of / would reach every service listening on one: /run/docker.sock is
root on the host. Without the network a step gets an empty /run and /var/run, and /dev/null
over each socket directly in a bound path. With it, /dev/null covers each socket under
/run but the resolver's (an emptied /run would hide what /etc/resolv.conf links to, and
NixOS's /run/current-system). Abstract sockets belong to the network namespace: a step
without the network has none of the host's; one with it reaches them all.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

RUN_DIRS = (Path("/run"), Path("/var/run"))
RESOLV_CONF = Path("/etc/resolv.conf")


def run_dirs() -> list[Path]:
    """/run and /var/run as the folders they are (/var/run is mostly a link to /run)."""
    return list(dict.fromkeys(path.resolve() for path in RUN_DIRS if path.is_dir()))


def hide_run(network: bool, hidden: Iterable[Path]) -> list[str]:
    """bwrap arguments for /run: empty without the network; with it, /dev/null over every
    socket there but the resolver's and those in `hidden` (resolved paths, emptied anyway)."""
    runs = run_dirs()
    if not network:
        return [arg for run in runs for arg in ("--tmpfs", os.fspath(run))]
    skip = set(hidden)
    resolver = RESOLV_CONF.resolve().parent  # nss-resolve's socket lies beside its target
    found = [path for run in runs for path in sockets_under(run, skip)]
    return _nulled(path for path in found if path.parent != resolver or resolver in runs)


def sockets_under(top: Path, skip: set[Path]) -> list[Path]:
    """Every socket below `top`, links not followed, folders in `skip` not entered. Walked
    without recursion: a deep /run (a container runtime's) cannot exhaust Python's stack."""
    found: list[Path] = []
    skipped = {os.fspath(path) for path in skip}  # compared as text: no Path an entry
    folders = [os.fspath(top)]
    while folders:
        for entry in _listed(folders.pop()):
            if entry.path in skipped:
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif _is_socket(entry):
                found.append(Path(entry.path))
    return found


def hide_bound(shown: Iterable[tuple[Path, Path]]) -> list[str]:
    """Without the network, /dev/null over each socket a bind shows directly: the bound path
    itself, or an entry of a bound folder, given as (on the runner, inside the step). Deeper
    ones are not looked for: walking a bound cache (tens of thousands of files in a pip or
    npm cache) before every step would cost more than the step; bind no folder that holds a
    service's socket below it."""
    inside: list[Path] = []
    for source, target in shown:
        if _socket_at(source):
            inside.append(target)
        elif source.is_dir():
            inside += [target / entry.name for entry in _listed(source) if _is_socket(entry)]
    return _nulled(inside)


def _listed(folder: Path | str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []  # a folder the runner cannot list is left as it is


def _is_socket(entry: os.DirEntry[str]) -> bool:
    if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
        return False  # d_type says so without a stat: most entries cost nothing more
    try:
        return stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


def _socket_at(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


NULLED = ["--ro-bind", "/dev/null"]  # followed by the path it covers


def _nulled(paths: Iterable[Path]) -> list[str]:
    return [arg for path in paths for arg in (*NULLED, os.fspath(path))]
