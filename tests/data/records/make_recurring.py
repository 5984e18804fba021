"""Make `recurring-run-2.bundle`: a recurring goal between runs, recorded by this release.

Run once per record-format change that is worth keeping (`python tests/data/records/make_recurring.py`
from the repository root); the committed bundle is then never regenerated: it stands for the
records an earlier release left behind, which every later release must load, resume and
verify (tests/record/test_old_records.py). The key and secret are test-only values.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.managed import SECRET, Key, ManagedRepo, base_goal, git  # noqa: E402

KEY = HERE / "owner-test-only"


def main() -> None:
    public = (HERE / "owner-test-only.pub").read_text().strip()
    goal = base_goal() | {"every": "2s"}
    # Steps name `python3` (not this machine's interpreter) so the bundle runs anywhere.
    goal["build"]["run"] = ["python3", "agent.py"]
    goal["judge"]["run"] = ["python3", "judge.py"]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HARNESS_SANDBOX"] = "off"
        repo = ManagedRepo.create(Path(tmp) / "repo", Key(KEY, public), goal=goal, mode="fix-on-1")
        for _ in range(2):
            due = repo.status().get("next_run_due")
            if due is not None:
                moment = datetime.fromisoformat(due.replace("Z", "+00:00")).timestamp()
                time.sleep(max(0.0, moment - time.time()) + 0.2)
            done = repo.harness("run")
            assert done.returncode == 0, done.stderr
        status = repo.status()
        assert (status["status"], status["run"]) == ("completed", 2), status
        print(yaml.safe_dump(status))
        bundle = HERE / "recurring-run-2.bundle"
        git(repo.root, "bundle", "create", str(bundle), "--branches")
        print(f"wrote {bundle} with secret {SECRET!r}")
        subprocess.run(["git", "bundle", "list-heads", str(bundle)], check=True)


if __name__ == "__main__":
    main()
