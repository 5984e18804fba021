"""Make `signed-parked.bundle`: a goal parked at its ship gate by a listed runner, each
checkpoint signed with the runner's key (issue 31), recorded by this release.

Run once per record-format change worth keeping (`python tests/data/records/make_signed.py`
from the repository root); the committed bundle is then never regenerated: a clone without
the secret must verify it by its runner's signature, and a runner holding `runner-test-only`
must ship it, in every later release (tests/record/test_old_records.py). The keys and the
secret are test-only values.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from harness.commands.runners import runners_sign  # noqa: E402
from harness.trust.runnerkey import ENV_RUNNER_KEY_FILE, load_runner_key  # noqa: E402
from tests.data.records.make_parked import KEY, SHIP  # noqa: E402
from tests.managed import SECRET, Key, ManagedRepo, base_goal, git  # noqa: E402

RUNNER_KEY = HERE / "runner-test-only"


def main() -> None:
    public = (HERE / "owner-test-only.pub").read_text().strip()
    goal = base_goal() | {"ship": {"run": SHIP, "timeout": "60s"}}
    goal["build"]["run"] = ["python3", "agent.py"]
    goal["judge"]["run"] = ["python3", "judge.py"]
    runner = load_runner_key({ENV_RUNNER_KEY_FILE: str(RUNNER_KEY)})
    assert runner is not None, f"make {RUNNER_KEY} first: harness runner-key new --file …"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HARNESS_SANDBOX"] = "off"
        repo = ManagedRepo.create(Path(tmp) / "repo", Key(KEY, public), goal=goal, mode="fix-on-1")
        (repo.root / ".harness" / "runners").write_text(f"runner-1 {runner.public_line}\n")
        runners_sign(repo.root, KEY, repo.env, io.StringIO())
        git(repo.root, "add", ".harness")
        git(repo.root, "commit", "-qm", "list runner-1")
        repo.env[ENV_RUNNER_KEY_FILE] = str(RUNNER_KEY)
        done = repo.harness("run")
        assert done.returncode == 0, done.stderr
        status = repo.status()
        assert (status["status"], status["gate"]) == ("parked_at_eyes", "ship"), status
        bundle = HERE / "signed-parked.bundle"
        git(repo.root, "bundle", "create", str(bundle), "--branches")
        print(f"wrote {bundle} with secret {SECRET!r}")
        subprocess.run(["git", "bundle", "list-heads", str(bundle)], check=True)


if __name__ == "__main__":
    main()
