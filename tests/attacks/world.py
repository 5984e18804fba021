"""The world every attack starts from, built once per module and copied per case.

Four goals on one managed repository, all driven through the real CLI:
- `g1`: approved and part way through (two steps run, the next build pending), so a
  refused `harness run g1` would otherwise run the agent;
- `g2`: approved, with a ship step, parked at `parked_at_eyes` / `ship`; also the source of
  foreign cells, ledger lines and approvals;
- `g3`: committed but never approved and never started: the target of approval attacks;
- `g4`: approved, run until it stopped at `needs_attention` / `budget_exhausted`.

Git worktrees record absolute paths (`.git/worktrees/<id>/gitdir` and the worktree's own
`.git` file), so a copy rewrites those two files to point at itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.managed import Key, ManagedRepo, base_goal, git, make_key

BUILD_SCRIPT = "attack_agent.py"
# The ship step only leaves a trace outside the repository, so a test can see it ran.
SHIP = "import os, pathlib; pathlib.Path(os.environ['TEST_COUNTER_DIR'], 'ship.log').write_text('shipped')"

# The goal's agent: the shared scripted agent, after first doing what the test planted in
# `plant.json` (outside the repository): write files, run git commands, then run Python
# code, in its worktree.
ATTACK_AGENT = r"""
import json, os, runpy, subprocess
from pathlib import Path
plan = Path(os.environ["TEST_COUNTER_DIR"]) / "plant.json"
if plan.exists():
    todo = json.loads(plan.read_text())
    for rel, text in todo.get("files", {}).items():
        Path(rel).parent.mkdir(parents=True, exist_ok=True)
        Path(rel).write_text(text)
    for args in todo.get("git", []):
        subprocess.run(["git", *args], check=True, capture_output=True)
    exec(todo.get("python", ""))
runpy.run_path("agent.py", run_name="__main__")
"""


def attack_goal(goal_id: str) -> dict[str, object]:
    goal = base_goal(goal_id)
    goal["build"] = {"run": [sys.executable, BUILD_SCRIPT], "timeout": "60s"}
    return goal


@dataclass(frozen=True)
class Keys:
    owner: Key
    mallory: Path  # an ed25519 key that is not an owner's
    ecdsa: Path  # an ecdsa-sha2-nistp256 key (ssh-keygen -t ecdsa -b 256)


@dataclass
class World:
    """One copy of the world: the repository, its counters and the keys.

    `live`: with the sandbox on (`sandbox: required` in the world's config), a step can
    write only what `sandbox_binds` shows, so the agent, judge and ship counters are kept
    in one folder outside every copy, named in the config (`rw:`), which each copy in turn
    takes over (the copies of one test process run one at a time). `home / "counters"`
    then holds the base world's counters, from which each copy starts."""

    home: Path
    keys: Keys
    env: dict[str, str] = field(default_factory=dict)
    live: Path | None = None

    @property
    def root(self) -> Path:
        return self.home / "repo"

    @property
    def counters(self) -> Path:
        return self.live if self.live is not None else self.home / "counters"

    @property
    def repo(self) -> ManagedRepo:
        return ManagedRepo(self.root, self.keys.owner, self.counters, "g1", self.env)

    def worktree(self, goal_id: str = "g1") -> Path:
        return self.root / ".harness" / "worktrees" / goal_id

    def ledger(self, goal_id: str = "g1") -> Path:
        return self.worktree(goal_id) / "ledger" / goal_id

    def segment(self, goal_id: str = "g1") -> Path:
        return self.ledger(goal_id) / "events" / "000001.jsonl"

    def cell(self, goal_id: str = "g1") -> Path:
        return self.ledger(goal_id) / "state.json"

    def lines(self, goal_id: str = "g1") -> list[bytes]:
        return self.segment(goal_id).read_bytes().splitlines(keepends=True)

    def write_lines(self, lines: list[bytes], goal_id: str = "g1") -> None:
        self.segment(goal_id).write_bytes(b"".join(lines))

    def commit_worktree(self, message: str, *extra: str) -> None:
        git(self.worktree(), "commit", "-q", "-a", *extra, "-m", message)

    def commit_control(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)

    def plant(
        self, files: dict[str, str], git_args: list[list[str]] | None = None, python: str = ""
    ) -> None:
        """What the agent will do at its next build, before its usual work."""
        plan = {"files": files, "git": git_args or [], "python": python}
        (self.counters / "plant.json").write_text(json.dumps(plan))

    def copy_to(self, home: Path) -> World:
        shutil.copytree(self.home, home, symlinks=True, copy_function=_link_objects)
        copy = World(home, self.keys, self.env, self.live)
        if self.live is not None:
            shutil.rmtree(self.live)
            shutil.copytree(home / "counters", self.live, symlinks=True)
        copy.env = self.env | {"TEST_COUNTER_DIR": str(copy.counters)}
        for admin in (copy.root / ".git" / "worktrees").iterdir():
            _repoint(admin / "gitdir", self.root, copy.root)
            _repoint(copy.worktree(admin.name) / ".git", self.root, copy.root)
        return copy


def _link_objects(source: str, target: str) -> None:
    """Hard-link git's object files (git never rewrites one in place); copy the rest."""
    if "/.git/objects/" in source:
        os.link(source, target)
    else:
        shutil.copy2(source, target)


def _repoint(path: Path, old: Path, new: Path) -> None:
    path.write_text(path.read_text().replace(str(old), str(new)))


def _ssh_keygen(*args: str) -> None:
    subprocess.run(["ssh-keygen", "-q", *args], check=True, capture_output=True)


def make_keys(folder: Path) -> Keys:
    folder.mkdir(parents=True)
    owner = make_key(folder, "owner")
    mallory = make_key(folder, "mallory").private
    ecdsa = folder / "ecdsa"
    _ssh_keygen("-t", "ecdsa", "-b", "256", "-N", "", "-C", "eve", "-f", str(ecdsa))
    return Keys(owner, mallory, ecdsa)


BASE_GITIGNORE = "__pycache__/\n/.harness/worktrees/\n*.local.sh\n"


def build_world(home: Path, sandbox: str = "off") -> World:
    """The base world of the module docstring, made through the real CLI, its steps run
    bare (`off`) or contained (`required`)."""
    keys = make_keys(home.parent / f"{home.name}-keys")
    goals = {g: attack_goal(g) for g in ("g2", "g3", "g4")}
    goals["g4"]["budget"] = {"max_iterations": 1}
    goals["g2"]["ship"] = {"run": [sys.executable, "-c", SHIP]}
    # `*.local.sh`: an ignore rule the repository already has (agent-ignored-script).
    files = {BUILD_SCRIPT: ATTACK_AGENT, ".gitignore": BASE_GITIGNORE}
    files |= {f"goals/{g}.yaml": yaml.safe_dump(goal, sort_keys=False) for g, goal in goals.items()}
    live = None
    if sandbox != "off":
        live = home.parent / f"{home.name}-counters"
        binds = json.dumps([f"rw:{live}"])
        files[".harness/config.yaml"] = f"sandbox: {sandbox}\nsandbox_binds: {binds}\n"
    repo = ManagedRepo.create(home / "repo", keys.owner, goal=attack_goal("g1"), files=files)
    # The world's own mode, whatever the test process's HARNESS_SANDBOX was when it was
    # made: the off world has no config, so the runner's variable decides there.
    repo.env["HARNESS_SANDBOX"] = sandbox
    if live is not None:
        repo.counters.rename(live)
        repo = ManagedRepo(
            repo.root, repo.key, live, "g1", repo.env | {"TEST_COUNTER_DIR": str(live)}
        )
    world = World(home, keys, repo.env, live)
    for goal_id in ("g2", "g4"):
        repo.harness("approve", goal_id, "--key", str(keys.owner.private), check=0, timeout=30)
    world.commit_control("approve g2 and g4")
    repo.harness("run", "g1", "--max-steps", "2", check=0, timeout=30)
    repo.harness("run", "g2", "g4", check=0, timeout=30)
    git(world.root, "repack", "-a", "-d", "-q")  # fewer files for every case to copy
    if live is not None:  # what every copy's counters start from
        shutil.copytree(live, home / "counters", symlinks=True)
    return world


def without_secret(env: dict[str, str], home: Path) -> dict[str, str]:
    """`env` with no secret anywhere: no variable, and an empty config folder."""
    cleared = {k: v for k, v in env.items() if k not in ("HARNESS_SECRET", "HARNESS_SECRET_FILE")}
    return cleared | {"XDG_CONFIG_HOME": str(home / "no-config")}
