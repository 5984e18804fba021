"""A read-only step's throw-away layer: what the step may write over its worktree, bound at
the worktree's path by the sandbox and removed after the step (docs/specs/sandbox.md,
"Read-only steps and the throw-away layer").

Where the kernel lets an unprivileged user mount overlayfs in a user namespace of its own
(Linux 5.11 and later), the layer is an overlay, mounted by the step's own process before it
execs (`Mounter`): the worktree is its read-only lower half and the step's writes go to an empty
upper folder, so no file is copied (`overlay_works` tries it once per folder). Elsewhere it
is a copy of the worktree. Either goes in memory (`/dev/shm`) when that has room, else in
the temporary folder. Each layer's folder is held with `flock` while its step runs, so a
later layer can tell the folder of a killed run (unlocked, older than a minute) from a live
one and remove it: a layer left in memory would otherwise hold that memory until the next
boot.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

MEMORY = Path("/dev/shm")
MEMORY_FLOOR = 1 << 30  # the free bytes /dev/shm needs for a layer to be put there
PREFIX = "goal-harness-layer-"
STALE_AFTER_S = 60.0  # an unlocked layer older than this was left by a killed run
_PAGE = 4096
T = TypeVar("T")


class TooBig(Exception):
    """The copy would pass the bytes it was allowed in memory."""


class LayerFailure(Exception):
    """No copy of the worktree could be made (a file the runner may not read, a full
    disk): the step cannot start, and says why instead of ending the run."""


@dataclass
class Layer:
    """One layer's folder, locked while it is open: `work` inside it is the copy, or for an
    overlay (`mount` set) the folder the overlay is mounted on inside the step's namespace,
    with the step's writes in `upper`."""

    folder: Path
    fd: int
    mount: Overlay | None = None

    @property
    def work(self) -> Path:
        return self.folder / ("merged" if self.mount else "work")

    @property
    def written(self) -> Path:
        """Where the files the step wrote are found after it ended (an overlay is mounted
        only in the step's own namespace, so outside it `work` is an empty folder)."""
        return self.folder / "upper" if self.mount else self.work

    @property
    def prepare(self) -> Mounter | None:
        """What the step's process runs before exec to mount the overlay it sees (None for
        a copy): `steps.run_step`'s `prepare`."""
        return None if self.mount is None else self.mount.mounter(self.folder)

    def remove(self) -> None:
        try:
            remove_tree(self.folder)
        finally:
            os.close(self.fd)


@contextlib.contextmanager
def layer_of(
    worktree: Path, memory: Path = MEMORY, *, overlay: Sequence[str] | None = ()
) -> Iterator[Layer]:
    """A layer over `worktree`, ignored files included (a judge needs its virtualenv),
    removed when the block ends; `overlay` as `make_layer` takes it."""
    layer = make_layer(worktree, memory, overlay=overlay)
    try:
        yield layer
    finally:
        layer.remove()


def make_layer(
    worktree: Path, memory: Path = MEMORY, *, overlay: Sequence[str] | None = ()
) -> Layer:
    """In `memory` if it has room for the copy and a step's writes, else on disk; an
    overlay where one works there, else a copy. `overlay` is the command that must also
    work inside the overlay's namespace (the sandbox's own check), or None for a copy only.
    Both places are first swept of what killed runs left, wherever this layer goes."""
    disk = Path(tempfile.gettempdir())
    for parent in dict.fromkeys((memory, disk)):
        sweep(parent)
    budget = memory_budget(memory)
    for parent in [memory] * (budget is not None) + [disk]:
        mount = None if overlay is None else overlay_works(parent, overlay)
        if mount is not None:
            try:
                return overlay_layer(parent, worktree, mount)
            except OSError as exc:
                raise LayerFailure(_why(exc, worktree)) from exc
    if budget is not None:
        layer = try_layer(memory, worktree, budget)
        if layer is not None:
            return layer
    try:
        found = try_layer(disk, worktree, None)
    except OSError as exc:
        raise LayerFailure(_why(exc, worktree)) from exc
    assert found is not None  # no budget: only an OSError stops it, and that is raised
    return found


def _why(exc: OSError, worktree: Path) -> str:
    where = os.fspath(exc.filename) if exc.filename is not None else ""
    with contextlib.suppress(ValueError):
        where = os.fspath(Path(where).relative_to(worktree)) if where else ""
    detail = f"{where}: {exc.strerror or exc}" if where else str(exc.strerror or exc)
    return f"harness: the read-only step's copy of the worktree could not be made: {detail}"


def memory_budget(memory: Path, floor: int = MEMORY_FLOOR) -> int | None:
    """The bytes a copy may take in `memory`: a quarter of what is free there, leaving the
    rest to the step's own writes and everyone else; None below `floor` free (a container's
    64 MiB /dev/shm) or when there is no such folder."""
    try:
        info = os.statvfs(memory)
    except OSError:
        return None
    free = info.f_bavail * info.f_frsize
    return free // 4 if free >= floor else None


def try_layer(parent: Path, worktree: Path, budget: int | None) -> Layer | None:
    """A layer in a new folder under `parent`, or None (and nothing left) when the copy
    would pass `budget` bytes or `parent` is full or cannot be written."""
    try:
        folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    except OSError:
        if budget is None:
            raise
        return None
    try:
        layer = Layer(folder, _locked(folder))
    except OSError:
        remove_tree(folder)
        raise
    try:
        copy_tree(worktree, layer.work, budget)
    except TooBig:
        layer.remove()
        return None
    except OSError as exc:
        layer.remove()
        if budget is None:  # on disk: make_layer says why
            raise
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # memory is full: the disk is next
            return None
        raise LayerFailure(_why(exc, worktree)) from exc  # on disk it would fail too
    return layer


# ---- an overlay over the worktree -----------------------------------------------------------

MOUNT_FAILED = "harness: the read-only step's overlay over the worktree could not be mounted"
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_OPTIONS = b"userxattr,lowerdir=lower,upperdir=upper,workdir=scratch"


def _load_libc() -> Any:
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()


@dataclass(frozen=True)
class Overlay:
    """Mounts a layer's overlay in a user and mount namespace of the runner's own, in the
    step's own process between fork and exec (`mounter`): libc's `unshare` and `mount`, no
    program started for it. The step's command (bwrap) then starts in that namespace with no
    capability: the runner's uid is mapped to itself, so exec drops what the namespace gave
    (for a runner that is root, bwrap's `--unshare-user --cap-drop ALL` does, sandbox.py).
    Mounted with relative paths from the layer's folder (no path needs escaping in the
    options: `lower` is a link to the worktree) and `userxattr` (without it, removing a
    folder of the worktree fails with EIO in a user namespace)."""

    uid: int
    gid: int

    def mounter(self, folder: Path) -> Mounter:
        return Mounter(self, os.fsencode(folder))


@dataclass(frozen=True)
class Mounter:
    """`steps.run_step`'s `prepare`: run in the child, before exec. Any failure raises, and
    the step does not start (`failure` says why)."""

    overlay: Overlay
    folder: bytes
    failure: str = MOUNT_FAILED

    def __call__(self) -> None:
        libc = _LIBC
        if libc is None or libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
            raise OSError(MOUNT_FAILED)
        _write("/proc/self/setgroups", b"deny")
        _write("/proc/self/uid_map", b"%d %d 1" % (self.overlay.uid, self.overlay.uid))
        _write("/proc/self/gid_map", b"%d %d 1" % (self.overlay.gid, self.overlay.gid))
        back = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.chdir(self.folder)
            if libc.mount(b"overlay", b"merged", b"overlay", 0, _OPTIONS) != 0:
                raise OSError(MOUNT_FAILED)
            os.fchdir(back)
        finally:
            os.close(back)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


_TRIED: dict[tuple[str, tuple[str, ...]], Overlay | None] = {}


def overlay_works(parent: Path, then: Sequence[str] = ()) -> Overlay | None:
    """The programs to mount an overlay with upper folders under `parent`, or None when
    that does not work here (an older kernel or util-linux, user namespaces refused, a file
    system overlayfs cannot write to) or `then` fails in its namespace (bwrap, which a
    runner that is root in a user namespace of its own cannot start in a nested one);
    tried once per folder and command a process uses."""
    key = (os.fspath(parent), tuple(then))
    if key not in _TRIED:
        _TRIED[key] = _try_overlay(parent, then)
    return _TRIED[key]


def _try_overlay(parent: Path, then: Sequence[str]) -> Overlay | None:
    if _LIBC is None or not os.path.exists("/bin/sh"):
        return None
    candidate = Overlay(os.getuid(), os.getgid())
    try:
        probe = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    except OSError:
        return None
    try:
        (probe / "lower" / "folder").mkdir(parents=True)
        (probe / "lower" / "folder" / "seen").touch()
        layer = _overlay_folders(probe / "layer", probe / "lower")
        step = 'test -e merged/folder/seen && rm -r merged/folder && : > merged/new && "$@"'
        argv = ["/bin/sh", "-c", step, "sh", *(then or ["true"])]
        done = subprocess.run(
            argv,
            cwd=layer,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=15,
            check=False,
            preexec_fn=candidate.mounter(layer),
        )
        works = done.returncode == 0 and (layer / "upper" / "new").exists()
    except (OSError, subprocess.SubprocessError):
        works = False
    finally:
        remove_tree(probe)
    return candidate if works else None


def overlay_layer(parent: Path, worktree: Path, mount: Overlay) -> Layer:
    """An overlay layer over `worktree` in a new folder under `parent`."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    try:
        layer = Layer(folder, _locked(folder), mount)
    except OSError:
        remove_tree(folder)
        raise
    try:
        _overlay_folders(folder, worktree)
    except OSError:
        layer.remove()
        raise
    return layer


def _overlay_folders(folder: Path, lower: Path) -> Path:
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in ("upper", "scratch", "merged"):
        (folder / name).mkdir(mode=0o700)
    # The upper folder's mode is the merged root's: the worktree's, as a copy keeps it.
    os.chmod(folder / "upper", stat.S_IMODE(os.stat(lower).st_mode))
    os.symlink(os.fspath(lower.resolve()), folder / "lower")
    return folder


def _locked(folder: Path) -> int:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def sweep(parent: Path) -> None:
    """Remove the layers under `parent` that killed runs of this user left behind."""
    now, uid = time.time(), os.getuid()
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX)]
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        old = now - info.st_mtime > STALE_AFTER_S
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and old:
            _remove_if_unlocked(Path(entry.path))


def _remove_if_unlocked(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a live run holds it
        os.close(fd)
        return
    Layer(folder, fd).remove()


def remove_tree(folder: Path) -> None:
    """`folder` and all in it, as far as it can be removed: also when a step took its write
    or read permission away from a folder in its copy, or nested folders deeper than
    `shutil.rmtree` can recurse (both would leave a layer in memory)."""
    top = os.fspath(folder)
    stack = [(top, False)]
    while stack:
        path, emptied = stack.pop()
        if emptied:
            _as_owner(os.rmdir, path, top)
            continue
        stack.append((path, True))
        for entry, is_dir in _as_owner(_entries, path, top) or []:
            if is_dir:
                stack.append((entry, False))
            else:
                _as_owner(os.unlink, entry, top)


def _entries(path: str) -> list[tuple[str, bool]]:
    with os.scandir(path) as entries:
        return [(e.path, e.is_dir(follow_symlinks=False)) for e in entries]


def _as_owner(function: Callable[[str], T], path: str, top: str) -> T | None:
    """`function(path)`; refused for want of permission, again after giving the folder
    (and the folder it is in) back their owner's permissions, never a folder outside
    `top` (the layer's own). None when it still fails."""
    for attempt in range(2):
        try:
            return function(path)
        except FileNotFoundError:
            return None
        except PermissionError:
            if attempt == 1:
                return None
            for target in (os.path.dirname(path), path):
                if target != top and not target.startswith(top + os.sep):
                    continue
                with contextlib.suppress(OSError):
                    if stat.S_ISDIR(os.lstat(target).st_mode):
                        os.chmod(target, 0o700)
        except OSError:
            return None
    return None


def copy_tree(source: Path, target: Path, budget: int | None) -> None:
    """`source` copied to `target` (made here): folders, regular files with their mode and
    times, symbolic links as links; a socket, pipe or device is left out, as are extended
    attributes. Raises TooBig once the copy would pass `budget` bytes (pages, counted as
    tmpfs counts them). `shutil.copytree` does the same in 2-3 times the time (its
    per-file `copystat` and extended-attribute calls; performance.md), and recurses."""
    spent = 0
    folders: list[tuple[str, os.stat_result]] = []
    stack = [(os.fspath(source), os.fspath(target))]
    while stack:
        src, dst = stack.pop()
        os.mkdir(dst, 0o700)
        folders.append((dst, os.stat(src, follow_symlinks=False)))
        with os.scandir(src) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                spent += _PAGE + (info.st_size + _PAGE - 1) // _PAGE * _PAGE
                if budget is not None and spent > budget:
                    raise TooBig(source)
                into = os.path.join(dst, entry.name)
                if stat.S_ISDIR(info.st_mode):
                    stack.append((entry.path, into))
                elif stat.S_ISREG(info.st_mode):
                    _copy_file(entry.path, into, info)
                elif stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(entry.path), into)
    for dst, info in reversed(folders):  # after their files, which change a folder's time
        os.chmod(dst, stat.S_IMODE(info.st_mode))
        os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))


def _copy_file(src: str, dst: str, info: os.stat_result) -> None:
    source = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            _send(source, out, info.st_size)
            os.fchmod(out, stat.S_IMODE(info.st_mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(source)


def _send(source: int, out: int, size: int) -> None:
    """The file's `size` bytes, by sendfile where the file system allows it, else by reads
    and writes from where sendfile stopped."""
    try:
        while size > 0 and (sent := os.sendfile(out, source, None, size)):
            size -= sent
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        while chunk := os.read(source, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
