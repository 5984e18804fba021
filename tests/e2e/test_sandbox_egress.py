"""Egress by name (docs/specs/sandbox.md, "Egress by name"): a contained build whose goal
says `network: {allow: [127.0.0.1:PORT_A]}` reaches server A through the harness's proxy
and nothing else, every attempt recorded with its verdict; `halt.on_denied_egress: park`
parks the goal for a signed unpark; without a sandbox such a goal is refused (exit 3).

The servers listen on the runner's 127.0.0.1. Server B is also named `b.test` through the
proxy's test hook (`HARNESS_EGRESS_RESOLVE`), so the build tries it by name, by address
through the proxy, by a raw socket past the proxy, and by DNS."""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sandbox import _events, _snapshot
from tests.eventdata import ledger_problems
from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal
from tests.tools import needs_bwrap

# A hostile build: every way out it can think of, each result written down; then the value.
PROBE = r"""
import json, os, socket, sys, urllib.error, urllib.request
a, b, abstract = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
found = {"proxy": os.environ.get("HTTPS_PROXY", ""), "no_proxy": os.environ.get("NO_PROXY")}

def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=10).read().decode()
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except OSError as exc:
        return f"error {type(exc).__name__}"

def connect(address, family=socket.AF_INET):
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(address)
            return "connected"
        except OSError as exc:
            return type(exc).__name__

found["a"] = fetch(f"http://127.0.0.1:{a}/value")
found["b"] = fetch(f"http://127.0.0.1:{b}/value")
found["b_by_name"] = fetch(f"http://b.test:{b}/value")
# CONNECT to B's address through the proxy, as a TLS client would ask for it
host, port = found["proxy"].removeprefix("http://").split(":")
with socket.create_connection((host, int(port)), timeout=5) as sock:
    sock.sendall(f"CONNECT 127.0.0.1:{b} HTTP/1.1\r\nHost: 127.0.0.1:{b}\r\n\r\n".encode())
    found["b_connect"] = sock.recv(100).split(b"\r\n")[0].decode()
found["b_raw"] = connect(("127.0.0.1", b))
found["abstract"] = connect("\0" + abstract, socket.AF_UNIX)
try:
    found["dns"] = socket.getaddrinfo("b.test", b)[0][4][0]
except OSError as exc:
    found["dns"] = type(exc).__name__
open("probes.json", "w").write(json.dumps(found, sort_keys=True) + "\n")
open("value.txt", "w").write("right\n")
"""


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    """Servers A and B on the runner's 127.0.0.1, answering `A` and `B`."""
    running = []
    for answer in (b"A", b"B"):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        server.answer = answer  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
    yield running[0].server_address[1], running[1].server_address[1]
    for server in running:
        server.shutdown()
        server.server_close()


@pytest.fixture
def abstract_socket() -> Iterator[str]:
    """A listener on an abstract Unix socket of the runner's network namespace."""
    name = f"harness-egress-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind("\0" + name)
        listener.listen(4)
        yield name


def _repo(
    tmp_path: Path,
    key: OwnerKey,
    ports: tuple[int, int],
    abstract: str,
    sandbox: str = "required",
    halt: dict[str, Any] | None = None,
) -> ManagedRepo:
    goal = base_goal()
    a, b = ports
    goal["build"]["run"] = [sys.executable, "probe.py", str(a), str(b), abstract]
    goal["build"]["network"] = {"allow": [f"127.0.0.1:{a}"]}
    goal["budget"]["max_iterations"] = 1
    goal["halt"] |= halt or {}
    config = f"sandbox: {sandbox}\nsandbox_binds: ['rw:{tmp_path / 'counters'}']\n"
    files = {"probe.py": PROBE, ".harness/config.yaml": config}
    repo = ManagedRepo.create(tmp_path / "repo", key, goal=goal, files=files)
    repo.env["HARNESS_EGRESS_RESOLVE"] = "b.test=127.0.0.1"  # the test hook: B by name
    return repo


def _finished(repo: ManagedRepo, step: str) -> dict[str, Any]:
    [event] = [e for e in _events(repo) if e["type"] == "step.finished" and e["step"] == step]
    data = event["data"]
    assert isinstance(data, dict)
    return data


@needs_bwrap
def test_a_build_reaches_only_what_its_allowlist_names(
    tmp_path: Path, owner_key: OwnerKey, servers: tuple[int, int], abstract_socket: str
) -> None:
    a, b = servers
    repo = _repo(tmp_path, owner_key, servers, abstract_socket)
    run = repo.harness("run", check=0)
    probes = json.loads((repo.worktree / "probes.json").read_text())
    assert probes["proxy"].startswith("http://127.0.0.1:")  # the forwarder, inside
    assert probes["no_proxy"] == "localhost,::1"  # 127.0.0.1 is listed: through the proxy
    assert probes["a"] == "A"
    assert probes["b"] == "HTTP 403"  # asked through the proxy, by its address
    assert probes["b_by_name"] == "HTTP 403"  # and by a name that resolves to it outside
    assert probes["b_connect"] == "HTTP/1.1 403 Forbidden"
    assert probes["b_raw"] == "ConnectionRefusedError"  # the step's loopback is its own
    assert probes["abstract"] == "ConnectionRefusedError"  # no abstract socket of the host
    assert probes["dns"] == "gaierror"  # no resolver inside: names resolve in the proxy
    assert repo.status()["status"] == "completed"  # a denial alone fails nothing
    egress = _finished(repo, "build")["egress"]
    verdicts = {(e["host"], e["port"], e["verdict"]): e for e in egress}
    assert set(verdicts) == {
        ("127.0.0.1", a, "allowed"),
        ("127.0.0.1", b, "denied"),
        ("b.test", b, "denied"),
    }
    allowed = verdicts[("127.0.0.1", a, "allowed")]
    assert allowed["count"] == 1 and allowed["sent"] > 0 and allowed["received"] > 0
    assert verdicts[("127.0.0.1", b, "denied")]["count"] == 2  # urllib's and the CONNECT
    assert verdicts[("b.test", b, "denied")]["why"] == "is not in this step's network allowlist"
    assert " build[1] started (network: allowlist)\n" in run.stdout
    assert " egress: 1 allowed, 3 denied: 127.0.0.1, b.test\n" in run.stdout
    assert "egress" not in _finished(repo, "judge")  # the judge shares the network
    assert repo.harness("replay", "g1", check=0).stdout == run.stdout
    assert ledger_problems(repo.root) == []  # the new keys are declared event data
    # the reports and diff --stat show the same, a table per step
    stat = repo.harness("diff", "g1", "--stat", check=0).stdout
    assert stat.endswith(  # git's own --stat first, as before
        " 2 files changed, 2 insertions(+)\nbuild[1] egress: 1 allowed, 3 denied: 127.0.0.1, b.test\n"
    )
    md = repo.harness("replay", "g1", "--format", "md", check=0).stdout
    assert md == (repo.ledger_dir / "report.md").read_text()
    assert "Egress of build[1]: 1 allowed, 3 denied: 127.0.0.1, b.test\n" in md
    assert f"| 127.0.0.1:{b} | denied (is not in this step's network allowlist) | 2 | 0 | 0 |" in md
    page = repo.harness("replay", "g1", "--format", "html", check=0).stdout
    assert page.count('<table class="egress">') == 1
    assert f'<tr class="egress-denied"><td>b.test:{b}</td>' in page


@needs_bwrap
def test_a_denied_connection_parks_the_goal_when_its_halt_says_so(
    tmp_path: Path, owner_key: OwnerKey, servers: tuple[int, int], abstract_socket: str
) -> None:
    repo = _repo(tmp_path, owner_key, servers, abstract_socket, halt={"on_denied_egress": "park"})
    run = repo.harness("run", check=0)
    status = repo.status()
    assert (status["status"], status["gate"]) == ("parked_at_eyes", "egress_denied")
    assert (
        "parked_at_eyes gate=egress_denied (build[1] tried to reach what its network" in run.stdout
    )
    assert repo.count("judge") == []  # parked before the judge ran
    repo.harness("run", check=0)  # a run alone leaves it parked
    assert repo.status()["gate"] == "egress_denied"
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


@needs_bwrap
def test_a_kill_before_the_gate_parks_on_the_next_run(
    tmp_path: Path, owner_key: OwnerKey, servers: tuple[int, int], abstract_socket: str
) -> None:
    # The third commit records the build's result; the harness dies before its gate.
    repo = _repo(tmp_path, owner_key, servers, abstract_socket, halt={"on_denied_egress": "park"})
    killed = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "after_commit@3"})
    assert killed.returncode == -9
    assert [e["type"] for e in _events(repo)][-1] == "step.finished"
    repo.harness("run", check=0)  # owes the gate: appended before anything else runs
    status = repo.status()
    assert (status["status"], status["gate"]) == ("parked_at_eyes", "egress_denied")
    started = [e["step"] for e in _events(repo) if e["type"] == "step.started"]
    assert started == ["build"] and repo.count("judge") == []  # the build was not run again


def test_without_the_sandbox_an_allowlist_refuses(
    tmp_path: Path, owner_key: OwnerKey, servers: tuple[int, int], abstract_socket: str
) -> None:
    repo = _repo(tmp_path, owner_key, servers, abstract_socket, sandbox="off")
    before = _snapshot(repo)
    proc = repo.harness("run")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (
        "harness: g1: refused: goals/g1.yaml: build.network.allow needs the sandbox, but "
        "steps are not contained: sandbox: off in the configuration; name sandbox: auto or "
        "required in .harness/config.yaml\n"
    )
    assert _snapshot(repo) == before
    assert repo.count("build") == []
