"""A hostile build under `sandbox: required`: what it tries, and that none of it lands.

The build is a real script committed in the repository (`probe_agent.py`). It tries to
write the main checkout, `.git/config`, `.git/hooks`, another goal's worktree and a file
outside the repository; to read the secret file, `~/.ssh` and `.git/harness/`; lists
`/proc`; and leaves a `setsid` child and a double-forked one behind. It records what it
saw in `probe.json` in its worktree. The harness's own files live outside /tmp (a fake
HOME under /var/tmp) so that each hide is tested by itself, not by the private /tmp.
Each test fails with the sandbox off (`test_without_the_sandbox_the_probe_reaches`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.managed import SECRET, Key, ManagedRepo, base_goal, git
from tests.tools import bwrap_problem, need_tool

# Each probe names its mode in its config (on and off): run once, not twice (conftest.py).
NAMES_ITS_SANDBOX_MODE = True
BWRAP = shutil.which("bwrap")


@pytest.fixture(autouse=True)
def _bwrap_works() -> None:
    problem = bwrap_problem()
    if problem is not None:
        need_tool(problem)


PROBE = r"""
import json, os, subprocess, sys
from pathlib import Path

plan = json.loads(Path("probe_plan.json").read_text())
seen = {}
# First, the capabilities a runner that is root would hand down: unmount what hides the
# secret and the keys, make / writable; whatever works, the reads and writes below use it.
escalations = {
    "umount_secret": ["umount", plan["read"]["secret_file"]],
    "umount_secret_folder": ["umount", os.path.dirname(plan["read"]["secret_file"])],
    "umount_ssh": ["umount", os.path.dirname(plan["read"]["ssh_key"])],
    "remount_root": ["mount", "-o", "remount,rw", "/"],
}
quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
seen["escalated"] = sorted(  # never tried bare: it would be the host's / and mounts
    name
    for name, argv in escalations.items()
    if plan["contained"] and subprocess.run(argv, **quiet).returncode == 0
)
status = Path("/proc/self/status").read_text().splitlines()
seen["capabilities"] = [line.split()[1] for line in status if line.startswith(("CapEff", "CapBnd"))]
for name, path in plan["write"].items():
    try:
        with open(path, "a") as handle:
            handle.write("the agent was here\n")
        seen[name] = "written"
    except OSError as exc:
        seen[name] = type(exc).__name__
for name, path in plan["read"].items():
    try:
        seen[name] = Path(path).read_text()
    except OSError as exc:
        seen[name] = type(exc).__name__
processes = []
for proc in Path("/proc").glob("[0-9]*"):
    try:
        processes.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    except OSError:
        pass
seen["processes"] = sorted(processes)
Path(os.environ["HOME"], "session.txt").write_text("kept\n")
loop = "import time\nwhile True: time.sleep(0.05)"
subprocess.Popen(["setsid", sys.executable, "-c", loop, plan["marker"] + "-setsid"], **quiet)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", loop, plan["marker"] + "-double"])
    os._exit(0)
os.wait()
Path("probe.json").write_text(json.dumps(seen, sort_keys=True))
print("probe done")
"""

# Passes only when the judge's home is a fresh one: nothing the build wrote in its home
# reaches the step that checks its work (threat-model.md, "What the agent wrote is data").
JUDGE = r"""
import os, sys
from pathlib import Path
sys.exit(1 if Path(os.environ["HOME"], "session.txt").exists() else 0)
"""


@dataclass(frozen=True)
class Probed:
    repo: ManagedRepo
    home: Path  # the runner's (fake) HOME, outside /tmp
    plan: dict[str, Any]
    before: dict[str, bytes | None]
    run: subprocess.CompletedProcess[str]

    def seen(self) -> dict[str, Any]:
        return dict(json.loads((self.repo.worktree / "probe.json").read_text()))

    def now(self) -> dict[str, bytes | None]:
        return _read_all(self.plan)


def _read_all(plan: dict[str, Any]) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for path in [*plan["write"].values(), *plan["read"].values()]:
        try:
            out[path] = Path(path).read_bytes()
        except FileNotFoundError:
            out[path] = None
    return out


def leftovers(marker: str) -> dict[int, str]:
    """The host processes whose command line carries `marker`: pid to command line."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline.endswith((f"{marker}-setsid ", f"{marker}-double ")):
            found[int(proc.name)] = cmdline
    return found


def probed_run(tmp_path: Path, owner_key: Key, sandbox: str) -> Iterator[Probed]:
    home = Path(tempfile.mkdtemp(prefix="harness-fake-home-", dir="/var/tmp"))
    try:
        (home / ".ssh").mkdir(mode=0o700)
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY OF THE OWNER\n")
        secret = home / ".config" / "goal-harness" / "secret"
        secret.parent.mkdir(parents=True)
        secret.write_text(SECRET + "\n")
        secret.chmod(0o600)
        (home / "outside.txt").write_text("outside the repository\n")
        goal = base_goal()
        goal["build"]["run"] = [sys.executable, "probe_agent.py"]
        goal["judge"]["run"] = [sys.executable, "judge_home.py"]
        root = tmp_path / "repo"
        marker = f"leftover-{uuid.uuid4().hex}"
        plan = {
            "marker": marker,
            "contained": sandbox != "off",
            "write": {
                "main_checkout": str(root / "agent.py"),
                "main_goal_file": str(root / "goals" / "g1.yaml"),
                "git_config": str(root / ".git" / "config"),
                "git_hook": str(root / ".git" / "hooks" / "post-checkout"),
                "other_worktree": str(root / ".harness" / "worktrees" / "g2" / "agent.py"),
                "outside": str(home / "outside.txt"),
            },
            "read": {
                "secret_file": str(secret),
                "ssh_key": str(home / ".ssh" / "id_ed25519"),
                "child_record": str(root / ".git" / "harness" / "locks" / "g1.child"),
                "other_worktree_file": str(root / ".harness" / "worktrees" / "g2" / "judge.py"),
            },
        }
        files = {
            ".gitignore": "/.harness/worktrees/\n",
            ".harness/config.yaml": f"sandbox: {sandbox}\n",
            "probe_agent.py": PROBE,
            "judge_home.py": JUDGE,
            "probe_plan.json": json.dumps(plan),
        }
        repo = ManagedRepo.create(root, owner_key, goal=goal, files=files)
        git(root, "worktree", "add", "-q", "-b", "harness/g2", ".harness/worktrees/g2")
        env = {k: v for k, v in repo.env.items() if k not in ("HARNESS_SECRET", "XDG_CONFIG_HOME")}
        env["HOME"] = str(home)
        before = _read_all(plan)
        run = repo.harness("run", env=env)
        yield Probed(repo, home, plan, before, run)
    finally:
        for pid in leftovers(marker):  # never leave the probe's processes behind
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def contained(tmp_path: Path, owner_key: Key) -> Iterator[Probed]:
    yield from probed_run(tmp_path, owner_key, "required")


def test_the_contained_probe_run_completes(contained: Probed) -> None:
    assert contained.run.returncode == 0, contained.run.stderr
    assert contained.repo.status()["status"] == "completed"
    assert contained.seen()["processes"]  # the probe itself ran
    # The judge did not see the build's file; the goal's own home keeps it for the next build.
    state = Path(contained.repo.env["XDG_STATE_HOME"]) / "goal-harness" / "homes"
    kept = list(state.glob("*/g1/session.txt"))
    assert [path.read_text() for path in kept] == ["kept\n"]


def test_build_cannot_write_the_main_checkout(contained: Probed) -> None:
    seen = contained.seen()
    assert (seen["main_checkout"], seen["main_goal_file"]) == ("OSError", "OSError")
    for name in ("main_checkout", "main_goal_file"):
        path = contained.plan["write"][name]
        assert contained.now()[path] == contained.before[path]


def test_build_cannot_write_git_config_or_hooks(contained: Probed) -> None:
    seen = contained.seen()
    assert (seen["git_config"], seen["git_hook"]) == ("OSError", "OSError")
    write = contained.plan["write"]
    assert contained.now()[write["git_config"]] == contained.before[write["git_config"]]
    assert contained.now()[write["git_hook"]] is None


def test_build_cannot_write_another_goals_worktree(contained: Probed) -> None:
    path = contained.plan["write"]["other_worktree"]
    # Other worktrees are behind an empty tmpfs: the step sees no file there at all.
    seen = contained.seen()
    assert (seen["other_worktree"], seen["other_worktree_file"]) == (
        "FileNotFoundError",
        "FileNotFoundError",
    )
    assert contained.now()[path] == contained.before[path]
    assert contained.before[path] is not None


def test_build_cannot_write_outside_its_worktree(contained: Probed) -> None:
    assert contained.seen()["outside"] == "OSError"
    path = contained.plan["write"]["outside"]
    assert contained.now()[path] == b"outside the repository\n"


def test_build_cannot_read_the_secret_file(contained: Probed) -> None:
    assert contained.seen()["secret_file"] == "FileNotFoundError"


def test_build_has_no_capability_to_undo_its_mounts(contained: Probed) -> None:
    """Also when the runner is root (as in most CI containers): bwrap hands a root caller's
    capabilities to the step unless told otherwise, and with them the step could unmount
    what hides the secret or make / writable."""
    seen = contained.seen()
    assert seen["escalated"] == []
    assert seen["capabilities"] == ["0000000000000000", "0000000000000000"]


def test_build_cannot_read_ssh_keys(contained: Probed) -> None:
    assert contained.seen()["ssh_key"] == "FileNotFoundError"


def test_build_cannot_read_git_harness(contained: Probed) -> None:
    # The record of the running step's group exists on the host while the build runs.
    assert contained.seen()["child_record"] == "FileNotFoundError"


def test_build_sees_no_harness_process(contained: Probed) -> None:
    processes = contained.seen()["processes"]
    assert len(processes) == 2, processes
    # Listed by command line, so the order depends on where the checkout's python lives.
    # A build's bwrap holds its gate's two descriptors first (contain/gate.py).
    assert BWRAP is not None
    gate = r"--info-fd \d+ --block-fd \d+"
    line = rf"{re.escape(BWRAP)} {gate} --ro-bind / / --dev /dev --proc /proc "
    bwrap = [p for p in processes if re.match(line, p)]
    assert len(bwrap) == 1, processes
    assert set(processes) - set(bwrap) == {f"{sys.executable} probe_agent.py "}


def test_setsid_and_double_forked_children_are_gone(contained: Probed) -> None:
    time.sleep(0.3)
    assert leftovers(contained.plan["marker"]) == {}


def test_without_the_sandbox_the_probe_reaches(tmp_path: Path, owner_key: Key) -> None:
    """The same probe with `sandbox: off`: the checks above would fail (the second line of
    defence still stops the goal: the build changed .git/config)."""
    for probed in probed_run(tmp_path, owner_key, "off"):
        seen = probed.seen()
        write, read = probed.plan["write"], probed.plan["read"]
        assert seen["main_checkout"] == seen["git_config"] == seen["outside"] == "written"
        assert seen["secret_file"] == SECRET + "\n"
        assert seen["ssh_key"] == "PRIVATE KEY OF THE OWNER\n"
        assert probed.now()[write["other_worktree"]] != probed.before[write["other_worktree"]]
        assert probed.now()[read["secret_file"]] == probed.before[read["secret_file"]]
        assert len(leftovers(probed.plan["marker"])) == 2
        assert probed.repo.status()["gate"] == "tamper"
