"""`harness demo`: a throwaway repository with a small bug, an owner key, a goal and a
scripted agent (a real process, no model, no network) that gets it wrong once and right
the second time. The loop runs to `parked_at_eyes`; the demo prints the report and the
commands a human would type next."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from harness.record.visible import block, line
from harness.store.gitrepo import run_git

# A documented demo value, never a real secret (docs/specs/demo.md).
DEMO_SECRET = "goal-harness-demo-secret-do-not-use-for-real-work"
DEMO_OWNER = "demo-owner@example.com"
GOAL_ID = "fix-calc-add"

CALC = "def add(a, b):\n    return a - b\n"
TEST = """import unittest

from calc import add


class CalcTest(unittest.TestCase):
    def test_add_positive(self):
        self.assertEqual(add(2, 3), 5)

    def test_add_negative(self):
        self.assertEqual(add(-1, 1), 0)


if __name__ == "__main__":
    unittest.main()
"""
AGENT = '''"""A scripted stand-in for a coding agent: wrong on the first try, right on the second."""
import json
import os
import shutil
import sys
from pathlib import Path

prompt = sys.stdin.read()
iteration = int(os.environ["HARNESS_ITERATION"])
if iteration == 1:
    body, summary = "    return abs(a) + abs(b)\\n", "first try: add magnitudes"
else:
    body, summary = "    return a + b\\n", "repair: " + ("saw the failing test" if "Failing:" in prompt else "plain sum")
Path("calc.py").write_text("def add(a, b):\\n" + body)
report = {"cost_usd": 0.0, "turns": 1, "summary": summary}
Path(os.environ["HARNESS_REPORT_FILE"]).write_text(json.dumps(report))
print(summary)
'''
SHIP = '''"""The ship step: in a real goal this would push or deploy. It runs only after a signed decision."""
from pathlib import Path

Path("SHIPPED").write_text("shipped\\n")
print("shipped")
'''


def goal_yaml(python: str) -> str:
    return f"""version: 1
id: {GOAL_ID}
owner: {DEMO_OWNER}
objective: |
  Make tests/test_calc.py pass: add(a, b) must return the sum of a and b.
build:
  run: [{json.dumps(python)}, agent.py]
  timeout: 60s
judge:
  run: [{json.dumps(python)}, -m, unittest, discover, -s, tests]
  timeout: 60s
ship:
  run: [{json.dumps(python)}, ship.py]
budget:
  max_iterations: 3
halt:
  no_progress_passes: 2
  max_passes: 20
expect:
  files: [calc.py]
"""


def _python() -> str:
    """`python3` when it is on PATH (a portable goal file), else this interpreter."""
    return "python3" if shutil.which("python3") else sys.executable


def make_owner_key(folder: Path, name: str = "owner") -> tuple[Path, str]:
    """An ed25519 key in OpenSSH format, made without ssh-keygen: `folder/name` (mode 0600)
    and `folder/name.pub`; returns the private key's path and the public key line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(private)
    path.chmod(0o600)
    (folder / f"{name}.pub").write_bytes(public + b"\n")
    return path, public.decode()


def _git(repo: Path, *args: str) -> None:
    run_git(list(args), repo)


def build_repo(base: Path) -> tuple[Path, Path]:
    """The demo repository (committed, approved) and the owner's private key path."""
    repo, keys = base / "repo", base / "keys"
    key_path, public = make_owner_key(keys)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Demo Owner")
    _git(repo, "config", "user.email", DEMO_OWNER)
    files = {
        ".gitignore": "__pycache__/\n*.pyc\n/.harness/worktrees/\n",
        ".harness/config.yaml": "version: 1\n",
        ".harness/owners": f"{DEMO_OWNER} {public}\n",
        "calc.py": CALC,
        "tests/test_calc.py": TEST,
        "agent.py": AGENT,
        "ship.py": SHIP,
        f"goals/{GOAL_ID}.yaml": goal_yaml(_python()),
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    from harness.commands.approve import approve

    with open(os.devnull, "w") as quiet:
        approve(repo, GOAL_ID, key_path, {}, quiet)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "demo: a bug, a goal and its approval")
    return repo, key_path


def demo(directory: Path | None, out: TextIO) -> int:
    base = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="harness-demo-"))
    if base.exists() and any(base.iterdir()):
        from harness.errors import InvalidInput

        raise InvalidInput(f"--dir: {base} is not empty (expected a new or empty folder)")
    repo, key_path = build_repo(base)
    out.write(
        line(f"demo repository: {repo}") + line(f"owner key: {key_path}") + "\n== harness run\n"
    )
    out.flush()
    from harness.commands.run import run

    env = {**os.environ, "HARNESS_SECRET": DEMO_SECRET}
    env.pop("HARNESS_SECRET_FILE", None)
    code = run(repo, [], None, None, env, out=out, err=out)
    report = repo / ".harness" / "worktrees" / GOAL_ID / "ledger" / GOAL_ID / "report.md"
    out.write(block(f"\n== report.md (on branch harness/{GOAL_ID})\n\n{report.read_text()}\n"))
    out.write(_next_steps(repo, key_path))
    return code


def _next_steps(repo: Path, key_path: Path) -> str:
    # The harness that runs now, by absolute path: `harness` need not be on PATH (a venv
    # that was never activated, `python -m harness`).
    from harness.commands.ci import harness_command

    harness = shlex.join(harness_command())
    return block(f"""== what a human types next
cd {shlex.quote(str(repo))}
export HARNESS_SECRET={DEMO_SECRET}
{harness} status                      # parked_at_eyes, gate ship
{harness} replay {GOAL_ID} --format md  # the same report, from the ledger alone
{harness} verify                      # chain, MACs, cell and approval
git -C .harness/worktrees/{GOAL_ID} diff main -- calc.py   # read what the agent changed
{harness} ship {GOAL_ID} --key {shlex.quote(str(key_path))}   # sign the ship decision; only then does ship.py run
""")
