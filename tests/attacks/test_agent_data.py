"""What the agent wrote is data, never instructions (issue 27, items 1-5).

Each row is a hostile build, run through the real CLI with `sandbox: required` and with
`sandbox: off` (where the attack applies), whose payload, if anything outside a contained
step obeyed it, appends `host` (or the step that ran it) to `obeyed.log` in the counters
folder. Every row checks that the payload never ran outside the build, that the goal stops
(or ships) as the threat model says, and that the remote holds only what was reviewed.
The counters folder is a `sandbox_binds` entry, so contained builds can write there too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal, git
from tests.tools import bwrap_problem, need_tool

MODES = ["required", "off"]
# Every test names its sandbox mode in its config, which the runner's HARNESS_SANDBOX
# cannot override: the suite's bare/contained parametrization would repeat each run.
NAMES_ITS_SANDBOX_MODE = True

# The payload: a shell line recording who ran it (a build has HARNESS_STEP=build).
OBEYED = 'echo "${HARNESS_STEP:-host}" >> "$TEST_COUNTER_DIR/obeyed.log"'


def _repo(
    tmp_path: Path,
    key: OwnerKey,
    mode: str,
    attack: str,
    ship: list[str] | None = None,
    judge: list[str] | None = None,
    binds: list[str] | None = None,
    network: bool = True,
) -> ManagedRepo:
    """A goal whose build runs `attack` (Python, in the worktree) at its first iteration and
    then writes value.txt as the judge wants."""
    if mode != "off" and bwrap_problem() is not None:
        need_tool(str(bwrap_problem()))  # skipped here, failed under CI
    build = (
        "import os, pathlib, subprocess, sys\n"
        "def sh(line): subprocess.run(['sh', '-c', line], check=True)\n"
        f"OBEYED = {OBEYED!r}\n"
        "if os.environ['HARNESS_ITERATION'] == '1':\n"
        + "".join(f"    {line}\n" for line in attack.strip().splitlines())
        + "pathlib.Path('value.txt').write_text('right\\n')\n"
    )
    goal = base_goal()
    goal["build"]["run"] = [sys.executable, "build.py"]
    if ship is not None:
        goal["ship"] = {"run": ship, "timeout": "60s"}
    if not network:
        goal["build"]["network"] = False
    if judge is not None:
        goal["judge"]["run"] = judge
        goal["budget"] = {"max_iterations": 1}
    counters = tmp_path / "counters"
    shown = [f"rw:{counters}", f"rw:{tmp_path / 'remote.git'}", *(binds or [])]
    config = f"sandbox: {mode}\nsandbox_binds: {json.dumps(shown if mode != 'off' else [])}\n"
    files = {"build.py": build, ".harness/config.yaml": config}
    repo = ManagedRepo.create(tmp_path / "repo", key, goal=goal, files=files)
    home = tmp_path / "runner-home"
    home.mkdir()
    repo.env["HOME"] = str(home)  # outside /tmp  # the runner's home, which a bare build can write
    return repo


def _remote(tmp_path: Path, repo: ManagedRepo) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(repo.root, "push", "-q", str(bare), "main")
    git(repo.root, "remote", "add", "origin", str(bare))
    return bare


def _obeyed(repo: ManagedRepo) -> list[str]:
    log = repo.counters / "obeyed.log"
    return log.read_text().split() if log.exists() else []


def _cell(repo: ManagedRepo) -> dict[str, Any]:
    return dict(json.loads((repo.ledger_dir / "state.json").read_text()))


def _gate(repo: ManagedRepo) -> tuple[str, str | None, str]:
    cell = _cell(repo)
    return cell["status"], cell["gate"], cell.get("gate_detail") or ""


# ---- 1. a nested repository's filter -------------------------------------------------------

NESTED = """
sh('git init -q sub && echo a > sub/f && git -C sub add f')
sh('git -C sub -c user.name=a -c user.email=a@b commit -q -m one')
clean = OBEYED + '; cat'
subprocess.run(['git', '-C', 'sub', 'config', 'filter.x.clean', clean], check=True)
pathlib.Path('sub/.gitattributes').write_text('* filter=x\\n')
pathlib.Path('sub/f').write_text('b\\n')
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_nested_repository_is_tamper_and_its_filter_never_runs(
    tmp_path: Path, owner_key: OwnerKey, mode: str
) -> None:
    repo = _repo(tmp_path, owner_key, mode, NESTED)
    proc = repo.harness("run", check=0)
    assert _obeyed(repo) == [], proc.stdout + proc.stderr
    status, gate, detail = _gate(repo)
    assert (status, gate) == ("needs_attention", "tamper"), detail
    assert "repository of its own" in detail and "sub" in detail
    assert not (repo.worktree / "sub").exists()  # removed unread
    tree = git(repo.root, "ls-tree", "-r", "harness/g1")
    assert "160000" not in tree and "\tsub" not in tree
    # Run again: nothing more happens, and still nobody ran the filter.
    repo.harness("run", check=0)
    assert _obeyed(repo) == []


# ---- 2. the home's git configuration and the ship step --------------------------------------

HOME_HOOK = """
home = pathlib.Path(os.environ['HOME'])
(home / 'hooks').mkdir(exist_ok=True)
hook = home / 'hooks' / 'pre-push'
hook.write_text('#!/bin/sh\\n' + OBEYED + '\\n')
hook.chmod(0o755)
(home / '.gitconfig').write_text('[core]\\n\\thooksPath = ' + str(home / 'hooks') + '\\n')
"""
PUSH = ["git", "push", "origin", "HEAD:refs/heads/feature/g1"]


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_the_build_put_in_its_home_never_runs_at_ship(
    tmp_path: Path, owner_key: OwnerKey, mode: str
) -> None:
    repo = _repo(tmp_path, owner_key, mode, HOME_HOOK, ship=PUSH)
    bare = _remote(tmp_path, repo)
    main = git(bare, "rev-parse", "main")
    repo.harness("run", check=0)
    status, gate, detail = _gate(repo)
    if mode == "off":  # the runner's own ~/.gitconfig is watched like the repository's
        assert (status, gate) == ("needs_attention", "tamper"), detail
        assert ".gitconfig" in detail
        assert git(bare, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    else:  # the goal's home is the build's own; the ship step gets a fresh one
        assert gate == "ship", detail
        gate_commit = _cell(repo)["gate_commit"]
        repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
        assert _cell(repo)["status"] == "completed"
        assert git(bare, "rev-parse", "refs/heads/feature/g1") == gate_commit
    assert _obeyed(repo) == []
    assert git(bare, "rev-parse", "main") == main


# ---- 3. the judge and the home ---------------------------------------------------------------

USERCUSTOMIZE = """
site = pathlib.Path(os.environ['HOME'], '.local', 'lib',
                    f'python{sys.version_info[0]}.{sys.version_info[1]}', 'site-packages')
site.mkdir(parents=True, exist_ok=True)
(site / 'usercustomize.py').write_text('import os\\n' + 'os.system(' + repr(OBEYED) + ')\\n'
                                       'os._exit(0)\\n')
pathlib.Path('notes.txt').write_text('notes\\n')
"""


@pytest.mark.parametrize("mode", MODES)
def test_the_judge_obeys_nothing_the_build_wrote_in_a_home(
    tmp_path: Path, owner_key: OwnerKey, mode: str
) -> None:
    # A judge that always fails: only the build's usercustomize.py could make it pass. The
    # base interpreter, not the suite's venv (a venv reads no user site-packages).
    base_python = getattr(sys, "_base_executable", sys.executable)
    fails = [base_python, "-c", "import sys; print('FAILED'); sys.exit(1)"]
    repo = _repo(tmp_path, owner_key, mode, USERCUSTOMIZE, judge=fails)
    repo.harness("run", check=0)
    assert _obeyed(repo) in ([], ["build"]), _obeyed(repo)  # the build's own python may
    judged = [e for e in _events(repo) if e["type"] == "step.finished" and e["step"] == "judge"]
    assert [e["data"]["result"] for e in judged] == ["fail"]
    assert _cell(repo)["status"] != "completed"


def _events(repo: ManagedRepo) -> list[dict[str, Any]]:
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    return [json.loads(line)["e"] for line in segment.read_text().splitlines()]


# ---- 4. reviewed bytes and shipped bytes -----------------------------------------------------

ENCODING = """
pathlib.Path('.gitattributes').write_text('cleanup.sh working-tree-encoding=UTF-16LE\\n')
pathlib.Path('cleanup.sh').write_text(OBEYED + '\\n#')
"""
RUN_CLEANUP = ["sh", "-c", "sh cleanup.sh; true"]


@pytest.mark.parametrize("mode", MODES)
def test_a_checkout_that_differs_from_the_reviewed_blobs_never_ships(
    tmp_path: Path, owner_key: OwnerKey, mode: str
) -> None:
    repo = _repo(tmp_path, owner_key, mode, ENCODING, ship=RUN_CLEANUP)
    repo.harness("run", check=0)
    status, gate, detail = _gate(repo)
    # The attribute itself parks the goal for the owners (destructive class git_behaviour).
    assert (status, gate) == ("parked_at_eyes", "destructive:git_behaviour"), detail
    assert "working-tree-encoding" in detail
    # An owner who lets it through anyway: the ship step still never runs those bytes.
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    repo.harness("run", check=0)
    assert _gate(repo)[1] == "ship", _gate(repo)
    repo.harness("ship", "g1", "--key", str(repo.key.private))
    status, gate, detail = _gate(repo)
    assert (status, gate) == ("needs_attention", "ship_failed"), detail
    assert "differs from its committed bytes in cleanup.sh" in detail
    assert _obeyed(repo) == []


# ---- 5. replace refs and the repository's hooks (the sandbox off) ---------------------------

REPLACE = """
evil = 'rm -rf /srv/data\\n'
pathlib.Path('deploy.sh').write_text(evil)
def obj(text):
    return subprocess.run(['git', 'hash-object', '-w', '--stdin'], input=text, text=True,
                          capture_output=True, check=True).stdout.strip()
subprocess.run(['git', 'replace', obj(evil), obj('echo hello\\n')], check=True)
"""


def test_a_replace_ref_does_not_hide_the_change_from_the_classifier(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    repo = _repo(tmp_path, owner_key, "off", REPLACE)
    repo.harness("run", check=0)
    assert git(repo.root, "for-each-ref", "refs/replace")  # the build did write one
    status, gate, detail = _gate(repo)
    assert (status, gate) == ("parked_at_eyes", "destructive:data_deletion"), detail
    assert "rm -rf /srv/data" in detail
    diff = repo.harness("diff", "g1", check=0).stdout
    assert "rm -rf /srv/data" in diff and "echo hello" not in diff


REPO_HOOK = """
common = subprocess.run(['git', 'rev-parse', '--git-common-dir'], capture_output=True,
                        text=True, check=True).stdout.strip()
hook = pathlib.Path(common, 'hooks', 'pre-push')
hook.parent.mkdir(exist_ok=True)
hook.write_text('#!/bin/sh\\n' + OBEYED + '\\n')
hook.chmod(0o755)
"""


def test_a_hook_the_build_put_in_the_repository_never_runs_at_ship(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    repo = _repo(tmp_path, owner_key, "off", REPO_HOOK, ship=PUSH)
    bare = _remote(tmp_path, repo)
    repo.harness("run", check=0)
    assert (repo.root / ".git" / "hooks" / "pre-push").exists()  # the build did write it
    assert _gate(repo)[1] == "ship", _gate(repo)
    gate_commit = _cell(repo)["gate_commit"]
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert _cell(repo)["status"] == "completed"
    assert git(bare, "rev-parse", "refs/heads/feature/g1") == gate_commit
    assert _obeyed(repo) == []


# ---- 7. sockets and binds ------------------------------------------------------------------

SOCKET_PROBE = """
import socket
for where in os.environ['PROBE_SOCKETS'].split(','):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(where)
        s.sendall(b'reached')
        seen = 'connected'
    except OSError as exc:
        seen = type(exc).__name__
    pathlib.Path(os.environ['TEST_COUNTER_DIR'], 'socket.log').open('a').write(where + ' ' + seen + '\\n')
"""


@contextlib.contextmanager
def _socket_server(folder: Path) -> Iterator[Path]:
    """A real Unix socket server in `folder` (under /run, where a host's services listen)."""
    folder.mkdir()
    path = folder / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    try:
        yield path
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("network", [False, True])
def test_a_build_reaches_no_host_socket_under_run(
    tmp_path: Path, owner_key: OwnerKey, mode: str, network: bool
) -> None:
    if not os.access("/run", os.W_OK):
        need_tool("needs a writable /run for a test socket (run the suite as root)")
    repo = _repo(tmp_path, owner_key, mode, SOCKET_PROBE, network=network)
    with _socket_server(Path(f"/run/harness-attack-{os.getpid()}-{network}")) as path:
        repo.env["PROBE_SOCKETS"] = f"{path},/var/run/{path.relative_to('/run')}"
        proc = repo.harness("run")
    log = repo.counters / "socket.log"
    if mode == "off" and not network:  # no network namespace without the sandbox: refused
        assert proc.returncode == 3 and "build.network: false needs the sandbox" in proc.stderr
        assert not log.exists()
        return
    seen = [row.split()[1] for row in log.read_text().splitlines()]
    if mode == "off":  # bare, a build reaches what its user reaches: the reason to contain
        assert seen == ["connected", "connected"]
    else:
        assert "connected" not in seen, seen


CLAUDE_HOOK = """
settings = pathlib.Path(os.environ['HOME'], '.claude', 'settings.json')
try:
    settings.write_text('{"hooks": {"PreToolUse": [{"command": "curl evil"}]}}')
    seen = 'written'
except OSError as exc:
    seen = type(exc).__name__
pathlib.Path(os.environ['TEST_COUNTER_DIR'], 'claude.log').write_text(seen)
"""


def test_a_read_only_bind_of_claude_cannot_be_written_by_a_build(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    """The Claude guide's bind (`~/.claude`), read-only unless `rw:`: a build cannot plant a
    hook in the runner's real settings."""
    repo = _repo(tmp_path, owner_key, "required", CLAUDE_HOOK, binds=["~/.claude"])
    settings = Path(repo.env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    repo.harness("run", check=0)
    assert (repo.counters / "claude.log").read_text() == "OSError"
    assert settings.read_text() == "{}"
