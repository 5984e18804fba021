"""Where the secret is while a goal runs (issue 13, done-when 7).

A build reads every /proc/<pid>/environ and /proc/<pid>/cmdline it can, during a run
started the way each generated set-up starts it (the cron line through `sh -c`, the systemd
unit's ExecStart with its Environment=, and by hand with HARNESS_SECRET set), and writes what
it finds. The secret may be in none of them (docs/guide/threat-model.md, "Where the secret
is"). The workflow's steps get the same scan in tests/commands/test_ci.py.

As root the build can read every process's environ, the harness's too: that the secret is
not there is then the harness's doing (it blanks its start-up block), not a permission. As
any other user the harness's environ is unreadable (it is undumpable); the test asserts
that instead. test_the_start_up_block_is_blanked_and_hidden checks both facts on one
process, as `nobody` too when the tests run as root.
"""

from __future__ import annotations

import configparser
import io
import json
import os
import secrets as random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harness.commands.ci import SERVICE_NAME, ci_cron, ci_systemd
from tests.managed import ManagedFactory, ManagedRepo, git
from tests.tools import need_tool

# Everything the build can read of every process, and the chain of processes above it.
SCAN = r"""
import json, os, pathlib
counters = pathlib.Path(os.environ["TEST_COUNTER_DIR"])
secret = (counters / "secret-value").read_bytes().strip()
hits, unreadable = [], []
for proc in pathlib.Path("/proc").iterdir():
    if not proc.name.isdigit():
        continue
    for part in ("environ", "cmdline"):
        try:
            data = (proc / part).read_bytes()
        except OSError:
            unreadable.append(f"{proc.name}/{part}")
            continue
        if secret in data:
            hits.append(f"{proc.name}/{part}")

def parent(pid):
    return int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

ancestors, pid = [], parent(os.getpid())
while pid > 1:
    ancestors.append([pid, pathlib.Path(f"/proc/{pid}/comm").read_text().strip()])
    pid = parent(pid)
report = {"hits": hits, "unreadable": unreadable, "ancestors": ancestors}
(counters / "scan.json").write_text(json.dumps(report))
pathlib.Path("value.txt").write_text("right\n")
"""

HARNESS = str(Path(sys.executable).parent / "harness")
ROOT = os.geteuid() == 0


def _goal() -> dict[str, Any]:
    return {
        "version": 1,
        "id": "g1",
        "owner": "owner@example.com",
        "objective": "Make value.txt say right.\n",
        "build": {"run": [sys.executable, "scan.py"], "timeout": "60s"},
        "judge": {"run": [sys.executable, "judge.py"], "timeout": "60s"},
        "budget": {"max_iterations": 3},
    }


def _scheduler_env(repo: ManagedRepo, home: Path) -> dict[str, str]:
    """What cron or systemd hands a job: a minimal PATH, HOME, nothing of the harness's."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TEST_COUNTER_DIR": str(repo.counters),
        "HARNESS_SANDBOX": "off",  # the scan must see the host's processes
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
    }


def _run_cron(repo: ManagedRepo, secret_file: Path, home: Path) -> None:
    out = io.StringIO()
    ci_cron(repo.root, out, 30, {"HARNESS_SECRET_FILE": str(secret_file)})
    (line,) = [x for x in out.getvalue().splitlines() if x and not x.startswith("#")]
    command = line.split(maxsplit=5)[5]
    # cron runs the entry's command with `sh -c`, from HOME.
    proc = subprocess.run(["sh", "-c", command], cwd=home, env=_scheduler_env(repo, home))
    assert proc.returncode == 0, (repo.root / ".git" / "harness" / "cron.log").read_text()


def _run_systemd(repo: ManagedRepo, secret_file: Path, home: Path) -> None:
    folder = home / "units"
    ci_systemd(repo.root, io.StringIO(), folder, 30, {"HARNESS_SECRET_FILE": str(secret_file)})
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]  # keys are case-sensitive
    text = (folder / SERVICE_NAME).read_text()
    unit.read_string(text)
    service = unit["Service"]
    # Every Environment= line (configparser keeps only the last of a repeated key).
    added = dict(
        line.removeprefix("Environment=").split("=", 1)
        for line in text.splitlines()
        if line.startswith("Environment=")
    )
    # systemd execs ExecStart itself (no shell) with the unit's Environment= added.
    proc = subprocess.run(
        service["ExecStart"].split(),
        cwd=service["WorkingDirectory"],
        env={**_scheduler_env(repo, home), **added},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def _run_by_hand(repo: ManagedRepo, secret_file: Path, home: Path) -> None:
    # The caller's own environment holding HARNESS_SECRET is the caller's choice; the
    # harness it starts must not keep it readable.
    secret = secret_file.read_text().strip()
    env = {**_scheduler_env(repo, home), "HARNESS_SECRET": secret}
    proc = subprocess.run([HARNESS, "run"], cwd=repo.root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


STARTS = {"cron": _run_cron, "systemd": _run_systemd, "by-hand": _run_by_hand}


@pytest.mark.parametrize("start", list(STARTS))
def test_a_build_finds_the_secret_in_no_process(
    managed: ManagedFactory, tmp_path: Path, start: str
) -> None:
    repo = managed(goal=_goal(), files={"scan.py": SCAN})
    secret = random.token_hex(32)  # unique: other runs on this machine hold tests' SECRET
    (repo.counters / "secret-value").write_text(secret)
    secret_file = tmp_path / "secret"
    secret_file.write_text(secret + "\n")
    secret_file.chmod(0o600)
    home = tmp_path / "home"
    home.mkdir()
    STARTS[start](repo, secret_file, home)
    report = json.loads((repo.counters / "scan.json").read_text())
    status = repo.harness("status", "--json", env={**repo.env, "HARNESS_SECRET": secret}, check=0)
    assert json.loads(status.stdout)[0]["status"] == "completed"
    assert report["hits"] == []
    pids = [pid for pid, _ in report["ancestors"]]
    # Between the build and this test: the harness alone, no shell kept alive above it.
    between = report["ancestors"][: pids.index(os.getpid())]
    assert [comm for _, comm in between] == ["harness"]
    harness_environ = f"{between[0][0]}/environ"
    if ROOT:  # readable: the scan really looked at the harness's start-up block
        assert harness_environ not in report["unreadable"]
    else:  # undumpable: a same-user build cannot read it at all
        assert harness_environ in report["unreadable"]


# --- the two facts the threat model states, on one process --------------------------------

HOLDER = (
    "import sys\n"
    "from harness.trust.secret import take_from_environment\n"
    "if sys.argv[1] == 'take':\n"
    "    held = take_from_environment()\n"
    "    assert held['HARNESS_SECRET'] == sys.argv[2], held\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def _read_environ(pid: int, as_user: list[str]) -> bytes | str:
    """The bytes of /proc/<pid>/environ as read by `as_user`, or why they could not be."""
    code = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())"
    # A bare environment: coverage's subprocess hook would have the reader write its data
    # file into the checkout, which another user may not do (and the error would hide EACCES).
    done = subprocess.run(
        [*as_user, sys.executable, "-c", code, f"/proc/{pid}/environ"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    return done.stdout if done.returncode == 0 else done.stderr.decode().splitlines()[-1]


def _holding(how: str, secret: str, as_user: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).parents[2]),
        "HARNESS_SECRET": secret,
    }
    proc = subprocess.Popen(
        [*as_user, sys.executable, "-c", HOLDER, how, secret],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _nobody_runs_python() -> bool:
    if not ROOT or shutil.which("setpriv") is None:
        return False
    done = subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", "import harness"],
        capture_output=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2])},
    )
    return done.returncode == 0


@pytest.mark.parametrize("user", ["this", "nobody"])
def test_the_start_up_block_is_blanked_and_hidden(user: str) -> None:
    """After take_from_environment, /proc/<pid>/environ holds no secret even for root, and
    the same user cannot open it; a process that did not take it shows it to both."""
    if user == "nobody" and ROOT and shutil.which("setpriv") is None:
        need_tool("needs setpriv (apt-get install util-linux)")
    if user == "nobody" and not _nobody_runs_python():
        pytest.skip("needs root, setpriv and a python that nobody can run the harness with")
    as_user = AS_NOBODY if user == "nobody" else []
    secret = random.token_hex(32)
    cwd = Path(tempfile.gettempdir())
    for how in ("take", "keep"):
        proc = _holding(how, secret, as_user, cwd)
        try:
            # setpriv execs python: the pid is the holder's.
            by_root_or_self = _read_environ(proc.pid, [])
            by_same_user = _read_environ(proc.pid, as_user) if as_user else by_root_or_self
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
        if how == "keep":  # the control: an ordinary process shows it to everyone who may read
            assert isinstance(by_root_or_self, bytes) and secret.encode() in by_root_or_self
            assert isinstance(by_same_user, bytes) and secret.encode() in by_same_user
            continue
        if ROOT:
            assert isinstance(by_root_or_self, bytes)
            assert secret.encode() not in by_root_or_self
            assert b"HARNESS_SECRET" not in by_root_or_self
            assert b"PATH=/usr/bin:/bin" in by_root_or_self  # the rest is left as it was
        if as_user or not ROOT:
            assert isinstance(by_same_user, str) and "Permission denied" in by_same_user


# Run by every python started with it on PYTHONPATH, before its main module: whether the
# process's start-up environment block holds the secret, and its command line.
PROBE = r"""
import json, os, pathlib
folder = os.environ.get("PROBE_DIR")
if folder:
    secret = pathlib.Path(folder, "secret-value").read_bytes().strip()
    proc = pathlib.Path("/proc/self")
    seen = {
        "argv": proc.joinpath("cmdline").read_bytes().decode().split("\0"),
        "holds": secret in proc.joinpath("environ").read_bytes(),
    }
    pathlib.Path(folder, f"{os.getpid()}.json").write_text(json.dumps(seen))
"""


def test_jobs_children_get_the_secret_through_a_pipe(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """`run --jobs 2` started with HARNESS_SECRET: each worker (`harness run --serve-fd`,
    which advances goals as `harness run <id>` would) gets it through a pipe, so not even the child's start-up block (readable by the same user until
    the child's first act) holds it; the parent's does, as the threat model says."""
    import yaml

    second = _goal() | {"id": "g2"}
    repo = managed(goal=_goal(), files={"scan.py": SCAN, "goals/g2.yaml": yaml.safe_dump(second)})
    repo.harness("approve", "g2", "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "g2")
    secret = random.token_hex(32)
    (repo.counters / "secret-value").write_text(secret)
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "secret-value").write_text(secret)
    (probes / "sitecustomize.py").write_text(PROBE)
    env = _scheduler_env(repo, tmp_path) | {
        "HARNESS_SECRET": secret,
        "PYTHONPATH": str(probes),
        "PROBE_DIR": str(probes),
    }
    proc = subprocess.run(
        [HARNESS, "run", "--jobs", "2"], cwd=repo.root, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads(p.read_text()) for p in probes.glob("*.json")]
    seen = [s for s in seen if "run" in s["argv"]]  # the harnesses, not their steps
    runs = sorted((" ".join(s["argv"][s["argv"].index("run") :][:2]), s["holds"]) for s in seen)
    assert runs == [("run --jobs", True), ("run --serve-fd", False), ("run --serve-fd", False)]
    status = repo.harness("status", "--json", env={**repo.env, "HARNESS_SECRET": secret}, check=0)
    assert [row["status"] for row in json.loads(status.stdout)] == ["completed", "completed"]
