"""A step the goal runs without network (`network: false`): under bwrap it has a network
namespace of its own, so a server on the runner's 127.0.0.1 is out of reach; without a
sandbox to cut it off the goal is refused (exit 3) before anything is written."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sandbox import _events, _snapshot
from tests.eventdata import ledger_problems
from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal
from tests.tools import needs_bwrap

# The build asks the server what to write; unreachable, it writes "offline" (and still
# exits 0, as an agent that cannot reach its API might).
FETCH = """
import sys, urllib.request
try:
    value = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
except OSError as exc:
    value = "offline"
    print("no network:", exc)
open("value.txt", "w").write(value + "\\n")
"""


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"right")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/value"
    server.shutdown()
    server.server_close()


def _repo(
    tmp_path: Path, key: OwnerKey, url: str, network: bool | None, sandbox: str
) -> ManagedRepo:
    goal = base_goal()
    goal["build"]["run"] = [sys.executable, "fetch.py", url]
    if network is not None:
        goal["build"]["network"] = network
    goal["budget"]["max_iterations"] = 1
    # The judge counts its runs in a folder outside the repository: bound writable.
    config = f"sandbox: {sandbox}\nsandbox_binds: ['rw:{tmp_path / 'counters'}']\n"
    files = {"fetch.py": FETCH, ".harness/config.yaml": config}
    return ManagedRepo.create(tmp_path / "repo", key, goal=goal, files=files)


def _build_started(repo: ManagedRepo) -> dict[str, object]:
    [started] = [e for e in _events(repo) if e["type"] == "step.started" and e["step"] == "build"]
    data = started["data"]
    assert isinstance(data, dict)
    return data


@needs_bwrap
@pytest.mark.parametrize("network", [None, True], ids=["default", "true"])
def test_a_contained_step_reaches_a_local_server(
    tmp_path: Path, owner_key: OwnerKey, local_server: str, network: bool | None
) -> None:
    repo = _repo(tmp_path, owner_key, local_server, network, "required")
    repo.harness("run", check=0)
    assert (repo.worktree / "value.txt").read_text() == "right\n"
    assert repo.status()["status"] == "completed"
    assert _build_started(repo)["sandbox"] == "bwrap"
    assert "network" not in _build_started(repo)


@needs_bwrap
def test_a_step_without_network_cannot_reach_it(
    tmp_path: Path, owner_key: OwnerKey, local_server: str
) -> None:
    repo = _repo(tmp_path, owner_key, local_server, False, "required")
    run = repo.harness("run", check=0)
    assert (repo.worktree / "value.txt").read_text() == "offline\n"
    # the run's own line and the replay say so; the judge shares the network
    assert " build[1] started (network off)\n" in run.stdout
    assert " judge[1] started\n" in run.stdout
    assert repo.harness("replay", "g1", check=0).stdout == run.stdout
    assert repo.status()["gate"] == "budget_exhausted"
    started = _build_started(repo)
    assert (started["sandbox"], started["network"]) == ("bwrap", "off")
    # the judge (network not named) is recorded as sharing the network
    [judge] = [e for e in _events(repo) if e["type"] == "step.started" and e["step"] == "judge"]
    assert "network" not in judge["data"]  # type: ignore[operator]
    assert ledger_problems(repo.root) == []  # the key is declared event data


def test_without_the_sandbox_a_step_without_network_refuses(
    tmp_path: Path, owner_key: OwnerKey, local_server: str
) -> None:
    repo = _repo(tmp_path, owner_key, local_server, False, "off")
    before = _snapshot(repo)
    proc = repo.harness("run")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (
        "harness: g1: refused: goals/g1.yaml: build.network: false needs the sandbox, but "
        "steps are not contained: sandbox: off in the configuration; name sandbox: auto or "
        "required in .harness/config.yaml\n"
    )
    assert _snapshot(repo) == before
    assert repo.count("build") == []


def test_network_must_be_true_or_false(
    tmp_path: Path, owner_key: OwnerKey, local_server: str
) -> None:
    repo = _repo(tmp_path, owner_key, local_server, None, "off")
    goal = repo.root / "goals" / "g1.yaml"
    goal.write_text(
        goal.read_text().replace("  timeout: 60s\n", "  timeout: 60s\n  network: no\n", 1)
    )
    proc = repo.harness("check", "g1")
    assert proc.returncode == 2, proc.stderr
    said = proc.stdout + proc.stderr
    assert (
        "goals/g1.yaml: build.network: got a string 'no' (expected true (the default), false"
        in said
    )
