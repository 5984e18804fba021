"""Make `parked-at-ship.bundle`: a goal parked at its ship gate, recorded by this release.

Run once per record-format change that is worth keeping (`python tests/data/records/make_parked.py`
from the repository root); the committed bundle is then never regenerated: it stands for the
records an earlier release left behind, which every later release must load, resume and
verify (tests/record/test_old_records.py). The key and secret are test-only values.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.managed import SECRET, Key, ManagedRepo, base_goal, git  # noqa: E402

KEY = HERE / "owner-test-only"
# Steps name `python3` (not this machine's interpreter) so the bundle runs anywhere.
SHIP = ["sh", "-c", 'echo "$HARNESS_GATE_COMMIT" >> "$TEST_COUNTER_DIR/ship.log"']


def main() -> None:
    public = (HERE / "owner-test-only.pub").read_text().strip()
    goal = base_goal() | {"ship": {"run": SHIP, "timeout": "60s"}}
    goal["build"]["run"] = ["python3", "agent.py"]
    goal["judge"]["run"] = ["python3", "judge.py"]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HARNESS_SANDBOX"] = "off"
        repo = ManagedRepo.create(Path(tmp) / "repo", Key(KEY, public), goal=goal, mode="fix-on-1")
        done = repo.harness("run")
        assert done.returncode == 0, done.stderr
        status = repo.status()
        assert (status["status"], status["gate"]) == ("parked_at_eyes", "ship"), status
        print(yaml.safe_dump(status))
        bundle = HERE / "parked-at-ship.bundle"
        git(repo.root, "bundle", "create", str(bundle), "--branches")
        print(f"wrote {bundle} with secret {SECRET!r}")
        subprocess.run(["git", "bundle", "list-heads", str(bundle)], check=True)


if __name__ == "__main__":
    main()
