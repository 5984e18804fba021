"""A managed repository for tests: goal, owners, approval, scripted agent and judge.

The agent and judge are small real Python scripts. Each appends a line to a counter file
outside the repository, so a test can count how often each really ran. When the steps run
contained (tests/conftest.py, `contained_steps`), the repository's config shows that folder to
them writable (`sandbox_binds: [rw:<counters>]`, `counters_bound`).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from harness.commands.approve import approve as approve_goal
from harness.commands.demo import make_owner_key

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
OWNER = "owner@example.com"


@dataclass(frozen=True)
class Key:
    private: Path
    public: str  # "ssh-ed25519 AAAA..."


def make_key(folder: Path, name: str) -> Key:
    return Key(*make_owner_key(folder, name))


# The agent: behaviour chosen by the test through AGENT_MODE in its own file.
AGENT = r"""
import json, os, sys, time
from pathlib import Path
counter = Path(os.environ["TEST_COUNTER_DIR"]) / "build.log"
iteration = os.environ["HARNESS_ITERATION"]
with counter.open("a") as f:
    f.write(iteration + "\n")
mode = Path("agent_mode.txt").read_text().strip() if Path("agent_mode.txt").exists() else "fix-on-2"
prompt = sys.stdin.read()
Path(os.environ["TEST_COUNTER_DIR"], f"prompt-{iteration}.txt").write_text(prompt)
if Path(os.environ["TEST_COUNTER_DIR"], "hang-build").exists():
    # Its pid inside a contained step is its namespace's (the same for every build), so the
    # name holds the time too; the test finds the host's pid itself (ManagedRepo.agent_pid).
    Path(os.environ["TEST_COUNTER_DIR"], f"hanging-{os.getpid()}-{time.time_ns()}").write_text("")
    time.sleep(120)
if mode == "nothing":
    pass
elif mode == "never":
    Path("attempts.txt").open("a").write(iteration + "\n")
elif mode == "fix-on-2":
    Path("value.txt").write_text("right\n" if int(iteration) >= 2 else "wrong\n")
elif mode == "fix-on-1":
    Path("value.txt").write_text("right\n")
elif mode == "tamper-owners":
    Path(".harness/owners").open("a").write("mallory ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9ZcHh0kQ6nqlqS0tPn6q1QJ1mH7xX5c8K0q9Q8lq8R\n")
    Path("value.txt").write_text("right\n")
elif mode == "tamper-goal":
    Path("goals/g1.yaml").open("a").write("# the agent was here\n")
    Path("value.txt").write_text("right\n")
elif mode == "env-dump":
    Path(os.environ["TEST_COUNTER_DIR"], "env.json").write_text(json.dumps(dict(os.environ)))
    Path("value.txt").write_text("right\n")
report = os.environ.get("HARNESS_REPORT_FILE")
if report:
    Path(report).write_text(json.dumps({"cost_usd": 0.25, "turns": 2, "summary": "did " + mode}))
print("agent done", mode)
"""

JUDGE = r"""
import os, sys
from pathlib import Path
counter = Path(os.environ["TEST_COUNTER_DIR"]) / "judge.log"
with counter.open("a") as f:
    f.write(os.environ.get("HARNESS_ITERATION", "?") + "\n")
value = Path("value.txt").read_text().strip() if Path("value.txt").exists() else ""
if value == "right":
    print("1 passed")
    sys.exit(0)
print("FAILED tests/test_value.py::test_value_is_right - AssertionError: value is " + repr(value))
sys.exit(1)
"""


def base_goal(goal_id: str = "g1") -> dict[str, Any]:
    py = sys.executable
    return {
        "version": 1,
        "id": goal_id,
        "owner": OWNER,
        "objective": "Make value.txt say right.\n",
        "build": {"run": [py, "agent.py"], "timeout": "60s"},
        "judge": {"run": [py, "judge.py"], "timeout": "60s"},
        "budget": {"max_iterations": 3},
        "halt": {"no_progress_passes": 2, "max_passes": 50},
    }


def wait_for(predicate: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, theirs, …), read from the host's /proc: a
    contained step is pid 2 of its own namespace, and this names it by the host's pid."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # ended while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except (FileNotFoundError, ProcessLookupError):
        return []


CONFIG = ".harness/config.yaml"


def counters_bound(files: dict[str, str], counters: Path) -> dict[str, str]:
    """`files` with the counters folder shown writable to contained steps: the config gains
    `sandbox_binds: [rw:<counters>]`, when the config leaves the mode to the runner and the
    runner's is not off (HARNESS_SANDBOX, `contained_steps`). Left alone when it names a mode or
    binds of its own (the test owns them) and when it is no mapping (a broken config)."""
    try:
        config = yaml.safe_load(files.get(CONFIG, "{}"))
    except yaml.YAMLError:
        return files
    if not isinstance(config, dict) or "sandbox_binds" in config:
        return files
    if "sandbox" in config or os.environ.get("HARNESS_SANDBOX", "auto") == "off":
        return files  # a test that names the mode (tests/e2e/test_sandbox.py) owns its binds
    text = files.get(CONFIG, "")
    binds = [f"rw:{counters}", *_checkout_bind()]
    if text.lstrip().startswith("{"):  # a flow mapping (JSON): a key cannot be appended
        return files | {CONFIG: json.dumps(config | {"sandbox_binds": binds})}
    # Appended, not re-dumped: the test's own text (its `off`, its comments) stays as written.
    bind = f"sandbox_binds: {json.dumps(binds)}\n"
    return files | {CONFIG: text + ("\n" if text and not text.endswith("\n") else "") + bind}


def _checkout_bind() -> list[str]:
    """This checkout, read-only, where it lies under /tmp (a CI clone): the sandbox gives a
    step a /tmp of its own, and the scripted agents and their captures are read from here.
    A user's agent under /tmp is hidden the same way (sandbox.md)."""
    checkout = Path(__file__).resolve().parents[1]
    return [str(checkout)] if checkout.is_relative_to("/tmp") else []


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class ManagedRepo:
    root: Path
    key: Key
    counters: Path
    goal_id: str
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        root: Path,
        key: Key,
        goal: dict[str, Any] | None = None,
        mode: str = "fix-on-2",
        files: dict[str, str] | None = None,
        approve: bool = True,
    ) -> ManagedRepo:
        goal = goal or base_goal()
        root.mkdir(parents=True)
        counters = root.parent / "counters"
        counters.mkdir(exist_ok=True)
        git(root, "init", "-q", "-b", "main")
        contents = {
            ".gitignore": "__pycache__/\n/.harness/worktrees/\n",
            ".harness/owners": f"{OWNER} {key.public}\n",
            "agent.py": AGENT,
            "judge.py": JUDGE,
            "agent_mode.txt": mode + "\n",
            f"goals/{goal['id']}.yaml": yaml.safe_dump(goal, sort_keys=False),
            **counters_bound(files or {}, counters),
        }
        for name, text in contents.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        env = {**os.environ, "HARNESS_SECRET": SECRET, "TEST_COUNTER_DIR": str(counters)}
        repo = cls(root, key, counters, goal["id"], env)
        if approve:  # in this process: `harness approve` itself is tested as a command
            approve_goal(root, goal["id"], key.private, env, io.StringIO())
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "set up")
        return repo

    def harness(
        self,
        *args: str,
        check: int | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "harness", *args],
            cwd=self.root,
            env=env if env is not None else self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check is not None:
            assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "harness", *args],
            cwd=self.root,
            env=env if env is not None else self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start_hanging_run(self, *args: str) -> tuple[subprocess.Popen[str], int]:
        """`harness run` whose agent hangs in its build; returns the run and the agent's pid."""
        (self.counters / "hang-build").write_text("")
        proc = self.spawn("run", *args)
        wait_for(lambda: any(self.counters.glob("hanging-*")))
        return proc, self.agent_pid(proc.pid)

    @staticmethod
    def agent_pid(run: int) -> int:
        """The host's pid of the scripted agent below the process `run`."""
        below = [(p, command_line(p)) for p in descendants(run)]
        # Contained, bwrap's own processes (its argv ends with the step's) are above it.
        (pid,) = [p for p, argv in below if argv[-1:] == ["agent.py"] and "bwrap" not in argv[0]]
        return pid

    def release_build(self) -> None:
        """Later builds no longer hang."""
        (self.counters / "hang-build").unlink()

    @property
    def worktree(self) -> Path:
        return self.root / ".harness" / "worktrees" / self.goal_id

    @property
    def ledger_dir(self) -> Path:
        return self.worktree / "ledger" / self.goal_id

    def count(self, step: str) -> list[str]:
        path = self.counters / f"{step}.log"
        return path.read_text().split() if path.exists() else []

    # What the tests read between the commands under test (status, replay, verify) runs in
    # this process: the same command functions the CLI calls, without a Python start and a
    # coverage start per look (the suite's largest cost). Where a test is about a command
    # as a user runs it, it drives the CLI with `harness(...)`.

    def _read(self, command: Callable[[io.StringIO, io.StringIO], int]) -> str:
        from harness.store.catfile import forget_readers

        out, err = io.StringIO(), io.StringIO()
        try:
            code = command(out, err)
        finally:
            forget_readers()  # the next command (another process) may remake the worktree
        assert code == 0, (code, out.getvalue(), err.getvalue())
        return out.getvalue()

    def status(self) -> dict[str, Any]:
        """The goal's `harness status --json` row."""
        from harness.commands.status import status

        text = self._read(
            lambda out, err: status(self.root, [self.goal_id], True, False, self.env, out, err)
        )
        rows = json.loads(text)
        assert len(rows) == 1
        return dict(rows[0])

    def verified(self) -> str:
        """`harness verify` of every goal's record; asserts it exits 0."""
        from harness.commands.verify import verify

        return self._read(lambda out, err: verify(self.root, [], self.env, out, err=err))

    def replayed(self) -> dict[str, Any]:
        """`harness replay <goal> --format json`, parsed."""
        from harness.commands.replay import replay

        data = io.BytesIO()

        def command(out: io.StringIO, err: io.StringIO) -> int:
            return replay(self.root, self.goal_id, "json", None, self.env, data, err)

        self._read(command)
        return dict(json.loads(data.getvalue()))

    def snapshot(self) -> dict[str, bytes]:
        """Every file below the repository (worktrees included), for byte comparisons."""
        files = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and "/.git/" not in str(path) and not str(path).endswith("/.git"):
                files[str(path.relative_to(self.root))] = path.read_bytes()
        return files

    def commit_goal_change(self, goal: dict[str, Any]) -> None:
        (self.root / "goals" / f"{self.goal_id}.yaml").write_text(
            yaml.safe_dump(goal, sort_keys=False)
        )
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "edit goal")


class ManagedFactory(Protocol):
    """The `managed` fixture: managed(goal=..., files=...) -> an approved, committed repo."""

    def __call__(
        self,
        *,
        goal: dict[str, Any] | None = None,
        mode: str = "fix-on-2",
        files: dict[str, str] | None = None,
        approve: bool = True,
    ) -> ManagedRepo: ...


def reviewer_clone(runner: ManagedRepo, folder: Path) -> tuple[Path, dict[str, str]]:
    """A clone of the runner's repository (its goal branches as origin's) at folder/laptop,
    and an environment with no secret and no runner key: no variable, no default file."""
    clone = folder / "laptop"
    git(folder, "clone", "-q", str(runner.root), str(clone))
    held = ("HARNESS_SECRET", "HARNESS_RUNNER_KEY_FILE")
    env = {k: v for k, v in runner.env.items() if not k.startswith(held)}
    env["XDG_CONFIG_HOME"] = str(folder / "laptop-config")
    return clone, env


def harness_in(clone: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`harness <args>` run in `clone` with `env` (a clone that is not a ManagedRepo)."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def keygen_verifies(repo: ManagedRepo, record: str, folder: Path) -> str:
    """Check one approval record with plain `ssh-keygen -Y verify`; returns its statement."""
    statement, _, armor = record.partition("-----BEGIN SSH SIGNATURE-----")
    signature = folder / "record.sig"
    signature.write_text("-----BEGIN SSH SIGNATURE-----" + armor)
    owners = str(repo.root / ".harness" / "owners")
    argv = ["ssh-keygen", "-Y", "verify", "-f", owners, "-I", OWNER, "-n", "harness"]
    proc = subprocess.run(
        [*argv, "-s", str(signature)], input=statement.encode(), capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    return statement
