"""loop/contain/sockets.py: the host's Unix sockets a contained step cannot connect to.

Real servers: a socket the test listens on in a folder of its own under /run (as root, as
the suite runs in CI), an abstract socket, and real contained steps that try to connect.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.loop.contain import sockets
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import Sandbox, contain
from harness.loop.steps import run_step
from tests.loop.test_sandbox import place_in, run_contained
from tests.tools import need_tool, needs_bwrap

# Tries to connect to each address given (a path, or @name for an abstract socket).
CONNECT = r"""
import json, socket, sys
seen = {}
for address in sys.argv[1:]:
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect("\0" + address[1:] if address.startswith("@") else address)
        seen[address] = "connected"
    except OSError as exc:
        seen[address] = type(exc).__name__
    finally:
        client.close()
print(json.dumps(seen))
"""


@contextlib.contextmanager
def _listening(address: str) -> Iterator[str]:
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + address[1:] if address.startswith("@") else address)
    server.listen(8)  # a connect() succeeds once queued: no accept needed
    try:
        yield address
    finally:
        server.close()


@pytest.fixture
def in_run() -> Iterator[Path]:
    """A folder of the test's own under /run, removed afterwards."""
    if not os.access("/run", os.W_OK):
        need_tool("needs to make a folder in /run (root)")
    folder = Path(tempfile.mkdtemp(prefix="harness-test-", dir="/run"))
    try:
        yield folder
    finally:
        for path in sorted(folder.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        folder.rmdir()


def _seen(place: Place, addresses: list[str], network: bool) -> dict[str, str]:
    result = run_contained(place, [sys.executable, "-c", CONNECT, *addresses], network)
    assert result.exit_code == 0, result.output_tail
    return dict(json.loads(result.stdout_tail))


def test_uncontained_a_step_connects_to_the_servers(tmp_path: Path, in_run: Path) -> None:
    """The servers below are real: a bare step reaches each."""
    abstract = f"@harness-test-{uuid.uuid4().hex}"
    with _listening(str(in_run / "s.sock")) as path, _listening(abstract):
        place = place_in(tmp_path)
        argv = [sys.executable, "-c", CONNECT, path, abstract]
        with contain(Sandbox("off", "off"), place, argv, {}, writable=True) as box:
            result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert json.loads(result.stdout_tail) == {path: "connected", abstract: "connected"}


@needs_bwrap
@pytest.mark.parametrize(
    ("network", "refused"),
    [(False, "FileNotFoundError"), (True, "ConnectionRefusedError")],
    ids=["network-off", "network-on"],
)
def test_no_step_connects_to_a_socket_under_run(
    tmp_path: Path, in_run: Path, network: bool, refused: str
) -> None:
    """Without the network /run is an empty folder; with it, the socket is /dev/null. Seen
    through /var/run too (on most hosts a link to /run)."""
    with _listening(str(in_run / "s.sock")) as path:
        via_var = f"/var/run/{in_run.name}/s.sock"
        seen = _seen(place_in(tmp_path), [path, via_var], network)
    assert seen == {path: refused, via_var: refused}


@needs_bwrap
@pytest.mark.parametrize(
    ("network", "expected"),
    [(False, "ConnectionRefusedError"), (True, "connected")],
    ids=["network-off", "network-on"],
)
@pytest.mark.parametrize("bound", ["folder", "socket"])
def test_a_bound_socket_is_reached_only_with_the_network(
    tmp_path: Path, in_run: Path, network: bool, expected: str, bound: str
) -> None:
    """A socket the owners bind (its folder, or the socket itself) is theirs to give a step
    that shares the network; without the network it is /dev/null like every other."""
    with _listening(str(in_run / "s.sock")) as path:
        place = place_in(tmp_path, binds=(str(in_run) if bound == "folder" else path,))
        seen = _seen(place, [path], network)
    assert seen == {path: expected}


@needs_bwrap
@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_the_resolvers_sockets_stay_with_the_network(
    tmp_path: Path, in_run: Path, monkeypatch: pytest.MonkeyPatch, network: bool
) -> None:
    """Where /etc/resolv.conf links into /run (systemd-resolved), the folder it links into
    keeps its sockets (nss-resolve's), with the network. The host's /etc/resolv.conf is not
    changed for a test: sockets.RESOLV_CONF points at a link of the test's own."""
    resolver = in_run / "resolve"
    resolver.mkdir()
    (resolver / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    link = tmp_path / "resolv.conf"
    link.symlink_to(resolver / "stub-resolv.conf")
    monkeypatch.setattr(sockets, "RESOLV_CONF", link)
    kept, other = str(resolver / "io.systemd.Resolve"), str(in_run / "other.sock")
    with _listening(kept), _listening(other):
        seen = _seen(place_in(tmp_path), [kept, other], network)
    if network:
        assert seen == {kept: "connected", other: "ConnectionRefusedError"}
    else:
        assert seen == {kept: "FileNotFoundError", other: "FileNotFoundError"}


@needs_bwrap
@pytest.mark.parametrize(
    ("network", "expected"),
    [(False, "ConnectionRefusedError"), (True, "connected")],
    ids=["network-off", "network-on"],
)
def test_abstract_sockets_are_the_network_namespaces(
    tmp_path: Path, network: bool, expected: str
) -> None:
    """What `network: true` still reaches: the host's abstract sockets (X11's, D-Bus's),
    which no mount can hide. Without the network the step has a namespace of its own."""
    with _listening(f"@harness-test-{uuid.uuid4().hex}") as abstract:
        seen = _seen(place_in(tmp_path), [abstract], network)
    assert seen == {abstract: expected}


@needs_bwrap
@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_no_step_connects_to_a_socket_in_the_runners_tmp(tmp_path: Path, network: bool) -> None:
    """/tmp/.X11-unix's case: the step's /tmp is its own, whatever the network."""
    folder = Path(tempfile.mkdtemp(prefix="harness-test-", dir="/tmp"))
    try:
        with _listening(str(folder / "X0")) as path:
            seen = _seen(place_in(tmp_path), [path], network)
    finally:
        (folder / "X0").unlink(missing_ok=True)
        folder.rmdir()
    assert seen == {path: "FileNotFoundError"}
