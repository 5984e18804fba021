"""Containing a step: the bubblewrap (`bwrap`) command line every step command runs under.

What a contained step sees (docs/specs/sandbox.md): the root file system read-only; its own
/dev, /proc (its own PID namespace: no harness or parent process is visible, and every
process in it ends when the step's command does) and /tmp; the main checkout and its `.git`
read-only; its goal's worktree writable for a build, and for every other step a throw-away
copy of it; a per-goal home that persists across the goal's steps. Hidden (an empty folder
or /dev/null over them): `.git/harness/`, every goal worktree but its own, the other goals'
homes, the secret file and the runner key, `~/.ssh`, `~/.gnupg`, the agent sockets' folder
and the host's sockets under /run (`sockets.py`). `sandbox_binds` are read-only unless `rw:`.

The mode comes from `.harness/config.yaml` (`sandbox:`), else the runner's
`HARNESS_SANDBOX`, else `auto`: contained when bwrap works, said in the record when not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import InvalidInput, TrustFailure, invalid
from harness.loop.contain.egress import (
    INSIDE,
    EgressProxy,
    egress_proxy,
    forwarder_argv,
    proxy_env,
)
from harness.loop.contain.layer import Mounter, layer_of
from harness.loop.contain.place import Place
from harness.loop.contain.sockets import NULLED, hide_bound, hide_run
from harness.model.config import SANDBOX_MODES, SandboxMode
from harness.model.network import Allowlist
from harness.record.events import Containment

ENV_SANDBOX = "HARNESS_SANDBOX"
ENV_LAYER = "HARNESS_LAYER"  # `copy`: a read-only step's layer is a copy, never an overlay
FIX = (
    "install bubblewrap (apt-get install bubblewrap); on Ubuntu 24.04 let it make user "
    "namespaces (an AppArmor profile for /usr/bin/bwrap, or "
    "sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
)
MAX_KEPT_BYTES = 64 * 1024 * 1024  # a JUnit file copied out of a throw-away layer
# The runner's own directories a child would otherwise read the tools' settings from.
_XDG_DIRS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
_PROBE_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Sandbox:
    mode: SandboxMode
    containment: Containment
    bwrap: str | None = None
    reason: str = ""  # why steps are not contained, for the record, status and doctor
    overlay: bool = True  # a read-only step's layer may be an overlay (HARNESS_LAYER)

    @property
    def on(self) -> bool:
        return self.containment == "bwrap"

    def describe(self) -> str:
        if self.on:
            return "steps are contained (bubblewrap)"
        return f"steps are not contained: {self.reason}"


def effective_mode(configured: SandboxMode | None, env: Mapping[str, str]) -> SandboxMode:
    """The config's `sandbox:`, else the runner's HARNESS_SANDBOX, else auto."""
    if configured is not None:
        return configured
    value = env.get(ENV_SANDBOX, "")
    if not value:
        return "auto"
    for mode in SANDBOX_MODES:
        if value == mode:
            return mode
    raise invalid(
        "environment", ENV_SANDBOX, f"{value!r} is not a sandbox mode", "auto, required or off"
    )


def resolve(configured: SandboxMode | None, env: Mapping[str, str]) -> Sandbox:
    """How this run's steps are contained. `required` without a working bwrap refuses
    (exit 3) before anything is written."""
    mode = effective_mode(configured, env)
    if mode == "off":
        return Sandbox(mode, "off", reason="sandbox: off in the configuration")
    bwrap = shutil.which("bwrap", path=env.get("PATH", os.defpath))
    problem = "bwrap is not installed (not on PATH)" if bwrap is None else probe(bwrap)
    if bwrap is not None and problem is None:
        return Sandbox(mode, "bwrap", bwrap, overlay=_layer_setting(env))
    assert problem is not None
    if mode == "required":
        raise TrustFailure(f".harness/config.yaml: sandbox: required, but {problem}; {FIX}")
    return Sandbox(mode, "unavailable", reason=problem)


def _layer_setting(env: Mapping[str, str]) -> bool:
    value = env.get(ENV_LAYER, "")
    if value not in ("", "auto", "copy"):
        raise invalid("environment", ENV_LAYER, f"{value!r} is not a layer kind", "auto or copy")
    return value != "copy"


def notice(configured: SandboxMode | None, env: Mapping[str, str]) -> str | None:
    """What `status` says when runs would not contain their steps (None: they would, or
    the owners chose `sandbox: off`)."""
    try:
        sandbox = resolve(configured, env)
    except TrustFailure as exc:
        return f"runs refuse to start: {exc}"
    except InvalidInput as exc:
        return str(exc)
    return None if sandbox.on or sandbox.mode == "off" else sandbox.describe()


def offline_refusal(sandbox: Sandbox, offline: Sequence[str], source: str) -> TrustFailure | None:
    """A goal with steps that say `network: false` or name an allowlist cannot run them
    uncontained: bare, the step would have the network the goal said it must not have.
    `offline`: `Goal.offline_steps()`, as `build.network: false` or `build.network.allow`."""
    if sandbox.on or not offline:
        return None
    off = [word.removesuffix(": false") for word in offline if word.endswith(": false")]
    named = ([", ".join(off) + ": false"] if off else []) + [
        w for w in offline if w[-6:] == ".allow"
    ]
    fix = "name sandbox: auto or required in .harness/config.yaml" if sandbox.mode == "off" else FIX
    return TrustFailure(
        f"{source}: {', '.join(named)} needs the sandbox, but {sandbox.describe()}; {fix}"
    )


def probe(bwrap: str) -> str | None:
    """None when `bwrap` can make the namespaces a step needs, else what went wrong."""
    return _identity(bwrap)[1]


NOBODY = "65534"
# Whose the step is, and with which capabilities (none): in a user namespace of its own,
# also when the runner is root, since bwrap otherwise hands a root caller's capabilities to
# the step, which could then remount / writable or unmount what hides the secret
# (tests/attacks/test_sandbox.py). A root runner's step is `nobody` there, which is root
# outside: it owns what root owns, and an agent's own sandbox (codex's bubblewrap) starts
# inside ours as for any other user, which as uid 0 without capabilities it cannot. Where a
# root runner is itself in a user namespace (a rootless container), bwrap cannot mount the
# step's /proc in a nested one: the step is then root without capabilities, in the
# runner's namespace.
_OWN_NAMESPACE = ("--unshare-user", "--cap-drop", "ALL")
_ROOT_AS_NOBODY = ("--unshare-user", "--uid", NOBODY, "--gid", NOBODY, "--cap-drop", "ALL")
_ROOT_WITHOUT_CAPS = ("--cap-drop", "ALL")


@functools.cache
def _identity(bwrap: str) -> tuple[tuple[str, ...], str | None]:
    """The identity arguments that work here, and None; else () and what went wrong."""
    tried = [_ROOT_AS_NOBODY, _ROOT_WITHOUT_CAPS] if os.getuid() == 0 else [_OWN_NAMESPACE]
    problem = None
    for identity in tried:
        problem = _try(bwrap, identity)
        if problem is None:
            return identity, None
    return (), problem


def _check_argv(bwrap: str, identity: tuple[str, ...]) -> list[str]:
    """A step of `true` under `bwrap`: what the probe runs, and inside a layer's overlay."""
    return [bwrap, *_base_args(identity), "--", shutil.which("true") or "/bin/true"]


def _try(bwrap: str, identity: tuple[str, ...]) -> str | None:
    try:
        done = subprocess.run(
            _check_argv(bwrap, identity),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            env={"PATH": os.defpath},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} does not run: {exc}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"{bwrap} does not work here: {lines[-1] if lines else f'exit {done.returncode}'}"


def _base_args(identity: tuple[str, ...]) -> list[str]:
    # No --new-session: the step has no terminal (steps.run_step starts it in its own
    # session), and a second setsid would take it out of the group the harness signals.
    return [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        *identity,
        "--die-with-parent",
    ]  # fmt: skip


def _hide(path: Path) -> list[str]:
    """bwrap arguments that hide `path` (resolved) from the step."""
    try:
        info = os.stat(path)
    except OSError:
        return []  # nothing there to hide
    where = os.fspath(path)
    if stat.S_ISDIR(info.st_mode):
        return ["--tmpfs", where]
    return [*NULLED, where]


_TMP = Path("/tmp").resolve()


@functools.cache
def _python_prefixes_in_tmp() -> tuple[Path, ...]:
    """The harness's own Python environment, where it lies under /tmp (a venv made there);
    found once a process."""
    prefixes = dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix))
    return tuple(p for p in prefixes if p.is_relative_to(_TMP) and p != _TMP)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another of them (a bind shows what lies below it)."""
    given = list(dict.fromkeys(paths))
    return [p for p in given if not any(p != q and p.is_relative_to(q) for q in given)]


def bwrap_argv(
    bwrap: str,
    place: Place,
    argv: Sequence[str],
    *,
    work: Path,
    scratch: Path | None,
    network: bool = True,
    egress: Path | None = None,
) -> list[str]:
    """`argv` under bwrap: `work` (the worktree itself or a throw-away layer) is mounted
    writable at the worktree's path; everything else as the module docstring says. Without
    `network`, the step has a network namespace of its own (only its own loopback); with
    `egress` too, the proxy's socket is bound in read-only (`egress.py`)."""
    worktree = os.fspath(place.worktree.resolve())
    home = place.home()
    hidden = [path.resolve() for path in place.hidden()]  # resolved once a step
    args = [bwrap, *_base_args(_identity(bwrap)[0]), *([] if network else ["--unshare-net"])]
    args += hide_run(network, hidden)  # the host's sockets (sockets.py)
    # The repository, or the Python the harness runs from (a venv a step's `python` may be),
    # may be under /tmp, which the tmpfs hides: show them again, read-only (a mount each:
    # only what lies under /tmp, and not a `.git` inside the checkout, which comes with it).
    kept = [place.repo_root.resolve(), place.common_dir.resolve(), *_python_prefixes_in_tmp()]
    for shown in _outermost(path for path in kept if path.is_relative_to(_TMP)):
        args += ["--ro-bind", os.fspath(shown), os.fspath(shown)]
    for path in hidden:
        args += _hide(path)
    args += ["--bind", os.fspath(home), os.fspath(home)]
    binds = place.bound()
    for bind in binds:  # missing on this machine: left out
        mount = "--bind-try" if bind.writable else "--ro-bind-try"
        args += [mount, os.fspath(bind.source), os.fspath(bind.target)]
    if not network:
        args += hide_bound((bind.source, bind.target) for bind in binds)
    if scratch is not None:
        args += ["--bind", os.fspath(scratch), os.fspath(scratch)]
    if egress is not None and not network:
        args += ["--ro-bind", os.fspath(egress), INSIDE]
    args += ["--bind", os.fspath(work), worktree, "--chdir", worktree]
    return [*args, "--", *argv]


def bare_env(env: Mapping[str, str], home: Path | None) -> dict[str, str]:
    """An uncontained step's environment: a read-only step's HOME is its fresh one (so it
    obeys nothing a build wrote in the runner's home); a build keeps the runner's."""
    if home is None:
        return dict(env)
    inner = {name: value for name, value in env.items() if name not in _XDG_DIRS}
    return inner | {"HOME": os.fspath(home)}


def contained_env(env: Mapping[str, str], place: Place) -> dict[str, str]:
    """The child's environment inside the sandbox: HOME is the goal's own home."""
    inner = {name: value for name, value in env.items() if name not in _XDG_DIRS}
    inner["HOME"] = os.fspath(place.home())
    return inner


# The agents' own folders the harness reads a build's spend from (loop/agents/records.py),
# and the variable that names each, when a `~/` bind shows the runner's folder inside.
_RECORD_DIRS = {".claude": "CLAUDE_CONFIG_DIR", ".codex": "CODEX_HOME"}


@dataclass
class Contained:
    """One step's command line, and (for a read-only step) its throw-away layer's folder."""

    argv: list[str]
    env: dict[str, str]
    layer: Path | None = None
    host_env: dict[str, str] = field(default_factory=dict)  # for reading its records
    bwrap: bool = False  # `argv` runs the command under bwrap (steps.run_step's `bwrap`)
    prepare: Mounter | None = None  # mounts the layer's overlay (steps.run_step's `prepare`)
    egress: EgressProxy | None = None  # the step's proxy, when its goal names an allowlist

    @property
    def records_env(self) -> dict[str, str]:
        """`env` as the harness must read it from outside: where a bind shows the runner's
        `~/.claude` or `~/.codex` inside the goal's home, the records are in the runner's."""
        return self.env | self.host_env


def _host_env(place: Place, env: Mapping[str, str]) -> dict[str, str]:
    # Only a writable bind: through a read-only one the agent wrote no records there.
    found = {}
    for bind, shown in zip(place.binds, place.bound(), strict=True):
        variable = _RECORD_DIRS.get(bind.path.removeprefix("~/"))
        home_bind = bind.path.startswith("~/") and bind.writable
        if variable is not None and home_bind and variable not in env:
            found[variable] = os.fspath(shown.source)
    return found


@contextlib.contextmanager
def contain(
    sandbox: Sandbox,
    place: Place,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    writable: bool,
    scratch: Path | None = None,
    keep: Sequence[str] = (),
    network: bool = True,
    allow: Allowlist | None = None,
) -> Iterator[Contained]:
    """The step's argv and env, contained when the sandbox is on. A read-only step works on
    a throw-away layer over the worktree (`layer.py`: an overlay or a copy), removed
    afterwards; the files named in `keep` (a
    JUnit report) are copied back into the worktree first, so the harness reads them where
    it always has. With `allow` (and `network` false) the step's only way out is its own
    egress proxy (`egress.py`), whose record `Contained.egress` reads."""
    with contextlib.ExitStack() as stack:
        if not writable:  # a fresh empty home (Place.home), contained or not
            fresh = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-home-")))
            place = dataclasses.replace(place, own_home=fresh)
        if not sandbox.on:
            if not network:  # refused before the run by offline_refusal; never run it bare
                raise TrustFailure(f"a step without network cannot run: {sandbox.describe()}")
            yield Contained(list(argv), bare_env(env, place.own_home))
            return
        assert sandbox.bwrap is not None
        place.home().mkdir(parents=True, exist_ok=True, mode=0o700)
        layer = None
        if not writable:
            overlay = sandbox.overlay
            check = _check_argv(sandbox.bwrap, _identity(sandbox.bwrap)[0]) if overlay else None
            layer = stack.enter_context(layer_of(place.worktree, overlay=check))
        work = place.worktree if layer is None else layer.work
        proxy = None
        inner, inner_env = list(argv), contained_env(env, place)
        if allow is not None and not network:
            proxy = stack.enter_context(egress_proxy(allow, env))
            inner, inner_env = forwarder_argv(inner), inner_env | proxy_env(allow)
        egress = None if proxy is None else proxy.socket
        full = bwrap_argv(
            sandbox.bwrap, place, inner, work=work, scratch=scratch, network=network, egress=egress
        )
        shown = None if layer is None else layer.folder
        prepare = None if layer is None else layer.prepare
        host = _host_env(place, env)
        yield Contained(full, inner_env, shown, host, True, prepare, proxy)
        if layer is not None:
            for rel in keep:
                _copy_out(layer.written, place.worktree, rel)


# bwrap's message when a mount point is missing on the read-only root (bubblewrap's
# `die_with_error` in setup_newroot): it stopped before its command ran.
_NO_MOUNT_POINT = re.compile(
    r"bwrap: Can't (?:mkdir parents for|create file at|mkdir) (?P<path>/[^\n]*): [^\n:]+\n?"
)
VANISHED_TRIES = 3  # a step's starts while the host's paths keep vanishing under it


def vanished_cover(output: str, argv: Sequence[str]) -> bool:
    """bwrap stopped before its command ran because a path the harness covered was removed
    between `contain()` finding it and bwrap's mounts: a host's socket covered with
    /dev/null (`sockets.py`; a service that restarts, a program that cleans up), or a
    hidden file or folder (`Place.hidden`: /run/user/<uid> at a user's logout, the folder
    of an ssh-agent that ends). Nothing of the step ran, so it is started again with a
    fresh walk (`execute.py`); sandbox.md, "Sockets"."""
    found = _NO_MOUNT_POINT.fullmatch(output)
    if found is None or os.path.lexists(found["path"]):
        return False
    args = list(argv)
    nulled = {args[i + 2] for i in range(len(args) - 2) if args[i : i + 2] == NULLED}
    emptied = {args[i + 1] for i in range(len(args) - 1) if args[i] == "--tmpfs"}
    return found["path"] in nulled | emptied


def _copy_out(layer: Path, worktree: Path, rel: str) -> None:
    """A regular file the step wrote at `rel`, copied into the worktree (never a link)."""
    source = layer / rel
    try:
        info = os.lstat(source)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_KEPT_BYTES:
        return
    target = worktree / rel
    if not target.resolve().is_relative_to(worktree.resolve()):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    shutil.copyfile(source, target)
