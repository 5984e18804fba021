"""A step's way out when its goal names an allowlist: the egress proxy outside the sandbox,
its Unix socket bound into it, and the forwarder the step's command starts behind
(docs/specs/sandbox.md, "Egress by name").

The harness binds the proxy's listening socket itself, in a folder of its own (0700, never
shown to the step; only the socket is bound in, read-only), and hands it to the proxy
process (`proxy.py`), so the step can connect from its first instant: connections wait in
the socket's backlog while the proxy starts. The step's command line is the forwarder's
(`forward.py`) followed by the command; the forwarder sets HTTP_PROXY, HTTPS_PROXY and
ALL_PROXY (and their lower-case forms) to its own port before it becomes the command.
NO_PROXY names the step's own loopback (`localhost,127.0.0.1,::1`) but any loopback host the
allowlist names, which it reaches through the proxy on the runner's loopback.

`HARNESS_EGRESS_RESOLVE` (the runner's environment; for tests) maps names to addresses the
proxy uses instead of DNS: `name=address[,name=address…]`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.errors import invalid
from harness.loop.contain.layer import LayerFailure
from harness.model.network import Allowlist, ip_literal, is_host_name, normal_host

ENV_RESOLVE = "HARNESS_EGRESS_RESOLVE"
INSIDE = "/tmp/.harness-egress.sock"  # where the step finds the proxy (its own /tmp)
LOOPBACK = ("localhost", "127.0.0.1", "::1")
STOP_TIMEOUT_S = 10.0
_MAX_RECORD_BYTES = 1 << 20
_MAX_FOLDER_BYTES = 90  # sun_path holds 108 bytes, the socket's name among them
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder `harness` is imported from
# Runs the proxy module with the harness the runner runs, whatever its install.
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from harness.loop.contain.proxy import main; sys.exit(main(sys.argv[1:]))"
)


def forwarder_argv(argv: list[str]) -> list[str]:
    """The step's command behind the forwarder, with the Python the harness runs on (read
    from the sandbox's read-only root; -I -S: no site, no environment of the step's)."""
    source = (Path(__file__).parent / "forward.py").read_text("utf-8")
    return [sys.executable, "-I", "-S", "-c", source, INSIDE, *argv]


def no_proxy(allow: Allowlist) -> str:
    """The step's own loopback, but the loopback hosts the allowlist sends to the runner's."""
    listed = allow.loopback_hosts()
    return ",".join(host for host in LOOPBACK if host not in listed)


def proxy_env(allow: Allowlist) -> dict[str, str]:
    """The variables a step with an allowlist gets from the harness (the forwarder adds the
    proxy's own address)."""
    kept = no_proxy(allow)
    return {"NO_PROXY": kept, "no_proxy": kept}


def resolve_hook(env: Mapping[str, str]) -> dict[str, list[str]]:
    """`HARNESS_EGRESS_RESOLVE`: names the proxy resolves to the addresses given."""
    mapping: dict[str, list[str]] = {}
    for item in filter(None, env.get(ENV_RESOLVE, "").split(",")):
        name, sep, address = item.partition("=")
        name = normal_host(name.strip())
        if not sep or not is_host_name(name) or ip_literal(address.strip()) is None:
            raise invalid(
                "environment", ENV_RESOLVE, f"{item!r} is not name=address", "name=address,…"
            )
        mapping.setdefault(name, []).append(address.strip())
    return mapping


# coverage.py's start variables, the only ones the proxy is given besides PATH: the test
# suite measures the proxy like every other harness process (scripts/test); no secret,
# token or setting of the runner's reaches it.
_COVERAGE = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")


def _measured() -> dict[str, str]:
    return {name: os.environ[name] for name in _COVERAGE if name in os.environ}


class EgressProxy:
    """One step's proxy: started with `start`, its record read by `stop` (once)."""

    def __init__(self, allow: Allowlist, resolve: Mapping[str, list[str]]) -> None:
        self.allow, self.resolve = allow, resolve
        self.folder = Path(tempfile.mkdtemp(prefix="harness-egress-"))  # 0700
        if len(os.fsencode(self.folder)) > _MAX_FOLDER_BYTES:  # a socket's path is short
            os.rmdir(self.folder)
            self.folder = Path(tempfile.mkdtemp(prefix="harness-egress-", dir="/tmp"))
        self.socket = self.folder / "proxy.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.record: dict[str, Any] | None = None

    def start(self) -> None:
        config = {"allow": self.allow.as_strings(), "resolve": dict(self.resolve)}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(os.fspath(self.socket))
            listener.listen(256)
            fd = listener.fileno()
            root, settings = os.fspath(_PACKAGE_ROOT), json.dumps(config)
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, root, str(fd), settings],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(fd,),
                env={"PATH": os.defpath, **_measured()},
                cwd=self.folder,
            )

    def stop(self) -> dict[str, Any]:
        """The proxy's record: `egress` (and `egress_more`), or `egress_error` when it
        could not be read (the proxy died); the proxy is ended either way."""
        if self.record is None:
            self.record = self._read()
        return self.record

    def _read(self) -> dict[str, Any]:
        proc = self.proc
        if proc is None:
            return {"egress": [], "egress_error": "the egress proxy did not start"}
        try:
            out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return {"egress": [], "egress_error": "the egress proxy did not stop in time"}
        try:
            record = json.loads(out[:_MAX_RECORD_BYTES])
        except ValueError:
            why = f"exit {proc.returncode}" if proc.returncode else "no record"
            return {"egress": [], "egress_error": f"the egress proxy ended early ({why})"}
        return record if isinstance(record, dict) else {"egress": [], "egress_error": "bad record"}

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def egress_proxy(allow: Allowlist, env: Mapping[str, str]) -> Iterator[EgressProxy]:
    """A running proxy for one step; ended (and its folder removed) when the step is. One
    that cannot start is a step that cannot start (`LayerFailure`: exit 126, its reason as
    its output), never the end of the run."""
    proxy = EgressProxy(allow, resolve_hook(env))
    try:
        try:
            proxy.start()
        except OSError as exc:  # no process to start, no socket to bind: the step cannot run
            raise LayerFailure(f"harness: the egress proxy could not start: {exc}") from None
        yield proxy
    finally:
        proxy.close()
