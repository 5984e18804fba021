"""The sandbox through `harness run`: read-only steps on a throw-away layer, what a run
does without a working bwrap (`required` refuses, `auto` says so), and the record of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.loop.contain.sandbox import FIX
from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal, git
from tests.tools import bwrap_problem, missing_command, need_tool, needs_bwrap, needs_command

BWRAP = shutil.which("bwrap")
WORKS = bwrap_problem() is None  # for parametrised modes (tests/attacks)

TEST_VALUE = """
from pathlib import Path

def test_value_is_right():
    assert Path("value.txt").read_text() == "right\\n"
"""


def _repo(
    tmp_path: Path,
    key: OwnerKey,
    sandbox: str | None,
    value: str = "right",
    junit: bool = False,
    build: str = "",
) -> ManagedRepo:
    goal = base_goal()
    build = build or f"open('value.txt', 'w').write('{value}\\n')"
    goal["build"]["run"] = [sys.executable, "-c", build]
    judge = [sys.executable, "-m", "pytest", "-q", "tests/test_value.py"]
    goal["judge"]["run"] = [*judge, "--junitxml=reports/junit.xml"] if junit else judge
    if junit:
        goal["judge"]["junit"] = "reports/junit.xml"
    files = {
        # __pycache__ is not ignored: a judge's bytecode would change the tree.
        ".gitignore": "/.harness/worktrees/\n",
        "tests/test_value.py": TEST_VALUE,
    }
    if sandbox is not None:
        files[".harness/config.yaml"] = f"sandbox: {sandbox}\n"
    repo = ManagedRepo.create(tmp_path / "repo", key, goal=goal, files=files)
    repo.env.pop("PYTHONDONTWRITEBYTECODE", None)  # the judge must write its bytecode
    return repo


def _events(repo: ManagedRepo) -> list[dict[str, object]]:
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    return [json.loads(line)["e"] for line in segment.read_text().splitlines()]


def _branch_files(repo: ManagedRepo) -> list[str]:
    return git(repo.root, "ls-tree", "-r", "--name-only", "harness/g1").splitlines()


@needs_bwrap
def test_a_pytest_judges_caches_never_reach_the_branch(tmp_path: Path, owner_key: OwnerKey) -> None:
    repo = _repo(tmp_path, owner_key, "required")
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert [f for f in _branch_files(repo) if "__pycache__" in f or "pytest_cache" in f] == []
    assert list(repo.worktree.rglob("__pycache__")) == []
    started = [e for e in _events(repo) if e["type"] == "step.started"]
    assert [(e["step"], e["data"]["sandbox"]) for e in started] == [  # type: ignore[index]
        ("build", "bwrap"),
        ("judge", "bwrap"),
    ]


def test_without_the_layer_a_pytest_judge_is_a_violation(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    """What the layer prevents: the same judge unsandboxed changes the tree."""
    repo = _repo(tmp_path, owner_key, "off")
    repo.harness("run", check=0)
    assert (repo.status()["status"], repo.status()["gate"]) == (
        "needs_attention",
        "read_only_violation",
    )


def test_a_violation_restores_the_tree_and_an_unpark_recovers(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    """Issue 18: the judge's writes were committed, so ignoring them later changed nothing,
    and the passing judge showed as `failing=(judge failed)`."""
    repo = _repo(tmp_path, owner_key, "off")
    out = repo.harness("run", check=0).stdout
    row = repo.status()
    assert (row["status"], row["gate"], row["failing_test"]) == (
        "needs_attention",
        "read_only_violation",
        None,
    )
    assert "tests/__pycache__/" in out and "restored" in out
    assert [f for f in _branch_files(repo) if "__pycache__" in f] == []
    assert list(repo.worktree.rglob("__pycache__")) == []
    assert git(repo.worktree, "status", "--porcelain") == ""
    exclude = repo.root / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "__pycache__/\n")
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    row = repo.status()
    assert (row["status"], row["iteration"], row["budget_used"]["iterations"]) == (
        "completed",
        1,
        1,
    )


@needs_bwrap
def test_a_junit_file_the_judge_writes_is_read(tmp_path: Path, owner_key: OwnerKey) -> None:
    repo = _repo(tmp_path, owner_key, "required", value="wrong", junit=True)
    repo.harness("run", "--max-steps", "2", check=0)
    row = repo.status()
    # The JUnit id (classname::name), not the output's (tests/test_value.py::…).
    assert row["failing_test"] == "tests.test_value::test_value_is_right"
    assert row["gate"] is None
    assert not (repo.worktree / "reports" / "junit.xml").exists()
    assert "reports/junit.xml" not in _branch_files(repo)


@needs_bwrap
@needs_command("unshare", "util-linux")
@pytest.mark.parametrize("layer", ["copy", "auto"])
def test_a_judge_without_room_for_its_copy_fails_and_says_why(
    tmp_path: Path, owner_key: OwnerKey, layer: str
) -> None:
    """No room for the judge's copy of the worktree, in memory or on disk (two small real
    tmpfs mounts in a mount namespace of the run's own): with copies (HARNESS_LAYER=copy)
    the judge cannot start, exits 126 with the reason, and the run goes on to its next
    round instead of ending with exit 1. An overlay (`auto`, where one works) needs no room
    for a copy: the judge runs and fails on its test, as it would bare."""
    big = "open('big.bin', 'wb').write(bytes(2 << 20))"
    repo = _repo(tmp_path, owner_key, "required", build=big)
    small = tmp_path / "tmpdir"
    small.mkdir()
    mounts = 'mount -t tmpfs -o size=64k tmpfs /dev/shm && mount -t tmpfs -o size=1m tmpfs "$0"'
    argv = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
            f'{mounts} && exec "$@"', os.fspath(small),
            sys.executable, "-m", "harness", "run", "--max-steps", "2"]  # fmt: skip
    env = repo.env | {"TMPDIR": os.fspath(small), "HARNESS_LAYER": layer}
    done = subprocess.run(argv, cwd=repo.root, env=env, capture_output=True, text=True)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    judged = [e for e in _events(repo) if e["type"] == "step.finished" and e["step"] == "judge"]
    data = judged[0]["data"]
    assert isinstance(data, dict)
    if layer == "auto":
        assert (data["exit_code"], data["failing_test"]) == (
            1,
            "tests/test_value.py::test_value_is_right",
        ), data
        return
    assert data["exit_code"] == 126
    assert "copy of the worktree could not be made" in str(data)
    assert "No space left on device" in str(data)
    row = repo.status()
    assert (row["status"], row["gate"]) == ("paused", None)  # the next run builds again


def _path_without_bwrap(tmp_path: Path, broken: bool) -> str:
    """A PATH with git (and `true`) but no working bwrap: missing, or one that fails the
    way bwrap does where user namespaces are not allowed (Ubuntu 24.04's AppArmor)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("git", "true", "ssh-keygen"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    if broken:
        fake = folder / "bwrap"
        fake.write_text(
            "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
        )
        fake.chmod(0o755)
    return str(folder)


def _snapshot(repo: ManagedRepo) -> dict[str, bytes]:
    files = {}
    for path in sorted(repo.root.rglob("*")):
        # A lock holds its holder's pid; the config cache is what reading the config
        # (to learn it says `required`) leaves. Neither is part of any record.
        machine_local = ("/.git/harness/locks/", "/.git/harness/cache/")
        if path.is_file() and not any(part in str(path) for part in machine_local):
            files[str(path.relative_to(repo.root))] = path.read_bytes()
    return files


@pytest.mark.parametrize("broken", [False, True], ids=["missing", "broken"])
def test_required_without_bwrap_refuses_and_writes_nothing(
    tmp_path: Path, owner_key: OwnerKey, broken: bool
) -> None:
    repo = _repo(tmp_path, owner_key, "required")
    before = _snapshot(repo)
    env = repo.env | {"PATH": _path_without_bwrap(tmp_path, broken)}
    proc = repo.harness("run", env=env)
    assert proc.returncode == 3, proc.stderr
    problem = (
        f"{tmp_path}/bin/bwrap does not work here: bwrap: setting up uid map: Permission denied"
        if broken
        else "bwrap is not installed (not on PATH)"
    )
    assert proc.stderr == (
        f"harness: g1: refused: .harness/config.yaml: sandbox: required, but {problem}; {FIX}\n"
    )
    assert proc.stdout == ""
    assert _snapshot(repo) == before
    assert repo.count("build") == []


def test_auto_without_bwrap_runs_and_says_so(tmp_path: Path, owner_key: OwnerKey) -> None:
    repo = _repo(tmp_path, owner_key, None)
    env = repo.env | {"PATH": _path_without_bwrap(tmp_path, broken=True)}
    env.pop("HARNESS_SANDBOX")  # the default: auto
    proc = repo.harness("run", env=env, check=0)
    lines = proc.stdout.splitlines()
    assert lines[0].endswith(
        "limits: iterations=3 seconds=7200 cost_usd=20.0 turns=300 passes=50"
        " (not contained: bwrap unavailable)"
    )
    assert [line.split(" ", 3)[3] for line in lines if " started" in line][1:] == [
        "build[1] started (not contained: bwrap unavailable)",
        "judge[1] started (not contained: bwrap unavailable)",
    ]
    events = _events(repo)
    assert [e["data"]["sandbox"] for e in events if "started" in str(e["type"])] == [  # type: ignore[index]
        "unavailable"
    ] * 3
    replay = repo.harness("replay", "g1", env=env, check=0).stdout
    assert replay == proc.stdout
    status = repo.harness("status", env=env, check=0)
    reason = (
        f"{tmp_path}/bin/bwrap does not work here: bwrap: setting up uid map: Permission denied"
    )
    assert status.stderr == f"harness: steps are not contained: {reason}\n"
    doctor = repo.harness("doctor", env=env)
    assert f"warn sandbox: steps are not contained: {reason}\n  fix: {FIX}\n" in doctor.stdout


def test_sandbox_off_is_recorded_and_silent(tmp_path: Path, owner_key: OwnerKey) -> None:
    repo = _repo(tmp_path, owner_key, "off")
    proc = repo.harness("run", check=0)
    assert "contained" not in proc.stdout
    assert {e["data"]["sandbox"] for e in _events(repo) if "started" in str(e["type"])} == {  # type: ignore[index]
        "off"
    }
    assert repo.harness("status", check=0).stderr == ""


def test_an_unknown_runner_default_is_refused(tmp_path: Path, owner_key: OwnerKey) -> None:
    repo = _repo(tmp_path, owner_key, None)
    proc = repo.harness("run", env=repo.env | {"HARNESS_SANDBOX": "sometimes"})
    assert proc.returncode == 2
    assert proc.stderr == (
        "harness: g1: error: environment: HARNESS_SANDBOX: 'sometimes' is not a sandbox "
        "mode (expected auto, required or off)\n"
    )
    assert repo.count("build") == [] and not repo.worktree.exists()


NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def _nobody_can_sandbox() -> str | None:
    """Why a goal cannot be run as `nobody` here, or None."""
    if os.geteuid() != 0:
        return "needs root (to become nobody)"
    missing = bwrap_problem() or missing_command("setpriv", "util-linux")
    if missing is not None:
        need_tool(missing)  # a missing tool: failed under CI; the rest is this machine's
    assert BWRAP is not None
    done = subprocess.run(
        [*AS_NOBODY, BWRAP, "--ro-bind", "/", "/", "--unshare-pid", "--", "true"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return f"bwrap fails as nobody: {done.stderr!r}"
    # The checkout (and its venv) may sit in a folder only root can enter (mktemp -d: 0700).
    imported = subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", "import harness"], capture_output=True, check=False
    )
    if imported.returncode != 0:
        return f"nobody cannot import the harness ({sys.executable}): {imported.stderr[-200:]!r}"
    return None


def test_a_goal_runs_contained_as_an_unprivileged_user(owner_key: OwnerKey) -> None:
    problem = _nobody_can_sandbox()
    if problem is not None:
        pytest.skip(problem)
    # Not under tmp_path: pytest's folders are root's own (0700); nobody could not enter.
    base = Path(tempfile.mkdtemp(prefix="harness-nobody-"))
    try:
        goal = base_goal()
        # This machine's venv python lives under root's 0700 home, which nobody may not
        # enter from inside a user namespace: the steps use the system's python.
        py = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        check_uid = (
            f"import os; assert os.getuid() == {NOBODY}; open('value.txt', 'w').write('right\\n')"
        )
        goal["build"]["run"] = [py, "-c", check_uid]
        goal["judge"]["run"] = [
            py,
            "-c",
            "import sys; sys.exit(open('value.txt').read() != 'right\\n')",
        ]
        files = {
            ".gitignore": "/.harness/worktrees/\n",
            ".harness/config.yaml": "sandbox: required\n",
        }
        repo = ManagedRepo.create(base / "repo", owner_key, goal=goal, files=files)
        (base / "home").mkdir()
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
        base.chmod(0o755)
        env = repo.env | {"HOME": str(base / "home"), "XDG_STATE_HOME": str(base / "state")}
        env["XDG_CONFIG_HOME"] = str(base / "home" / ".config")
        proc = subprocess.run(
            [*AS_NOBODY, sys.executable, "-m", "harness", "run"],
            cwd=repo.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[-1].endswith(" g1 #6 completed"), _events(repo)[2]["data"][
            "output_tail"
        ]  # type: ignore[index]
        started = [e for e in _events(repo) if e["type"] == "step.started"]
        assert [e["data"]["sandbox"] for e in started] == ["bwrap", "bwrap"]  # type: ignore[index]
        assert (base / "state" / "goal-harness" / "homes").stat().st_uid == NOBODY
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_bind_showing_a_hidden_path_refuses_before_anything_is_written(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    repo = _repo(tmp_path, owner_key, "auto")
    (repo.root / ".harness" / "config.yaml").write_text("sandbox_binds: [~/.ssh]\n")
    git(repo.root, "commit", "-qam", "bind ~/.ssh")
    before = _snapshot(repo)
    env = repo.env | {"HOME": str(tmp_path / "home")}
    proc = repo.harness("run", env=env)
    assert proc.returncode == 2
    assert proc.stderr == (
        "harness: g1: error: .harness/config.yaml: sandbox_binds[0]: '~/.ssh' would let a "
        f"step see or write {tmp_path / 'home' / '.ssh'} (expected a path outside the "
        "repository, ~/.ssh, ~/.gnupg and the secret's folder)\n"
    )
    assert _snapshot(repo) == before


@pytest.mark.parametrize("entry", ["rw:", "rw:relative", "rw: ~/.claude", "rw:~/"])
def test_a_bad_rw_bind_is_refused_naming_the_entry(
    tmp_path: Path, owner_key: OwnerKey, entry: str
) -> None:
    repo = _repo(tmp_path, owner_key, "auto")
    config = repo.root / ".harness" / "config.yaml"
    config.write_text(f"sandbox_binds: [~/.aider, {json.dumps(entry)}]\n")
    git(repo.root, "commit", "-qam", "a bad bind")
    before = _snapshot(repo)
    proc = repo.harness("run")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"harness: .harness/config.yaml: sandbox_binds[1]: {entry!r} is not a path "
        "to bind (expected ~/<path> or an absolute path without .., read-only, or writable as "
        "rw:<path>)\n"
    )
    assert _snapshot(repo) == before


@needs_bwrap
@needs_command("ssh-agent", "openssh-client")
@pytest.mark.parametrize("sandbox", ["required", "auto"])
def test_a_repository_inside_the_agent_sockets_folder_is_refused_at_the_start(
    tmp_path: Path, owner_key: OwnerKey, sandbox: str
) -> None:
    """The folder of SSH_AUTH_SOCK is hidden from every step; a repository inside it would
    be too, and git would fail in every step. The runner's setup is wrong, not the owners'
    files: exit 3 with what to do, before anything is written."""
    folder = tmp_path / "agent"
    folder.mkdir(mode=0o700)
    socket = folder / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL)
    try:
        repo = _repo(folder, owner_key, sandbox)
        before = _snapshot(repo)
        proc = repo.harness("run", env=repo.env | {"SSH_AUTH_SOCK": str(socket)})
    finally:
        agent.kill()
        agent.wait()
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (
        f"harness: g1: refused: {folder}/repo lies inside {folder} (the folder of "
        "SSH_AUTH_SOCK), which every contained step has hidden, so no step could see the "
        "repository; start the agent with a socket in a folder of its own (ssh-agent -a "
        "~/.ssh/agent.sock), or move the repository out of it\n"
    )
    assert _snapshot(repo) == before
    assert repo.count("build") == []
