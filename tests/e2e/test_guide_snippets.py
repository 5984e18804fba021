"""The ssh-keygen snippets of docs/guide/approvals.md, run as written in a managed repository:
they work, and they leave nothing in the repository but the approval they add to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.managed import OWNER, ManagedFactory, git

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "approvals.md"
BIN = str(Path(sys.executable).parent)


def _snippet(heading: str) -> str:
    """The first ```sh block under `heading`."""
    text = GUIDE.read_text()
    after = text[text.index(heading) :]
    found = re.search(r"```sh\n(.*?)```", after, re.S)
    assert found is not None
    return found[1]


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_signing_and_checking_snippets_leave_no_files(managed: ManagedFactory) -> None:
    repo = managed(approve=False)
    env = {**repo.env, "PATH": f"{BIN}:{os.environ['PATH']}"}
    sign = _snippet("### Signing with plain ssh-keygen")
    sign = sign.replace("id=fix-login", f"id={repo.goal_id}")
    sign = sign.replace("~/.ssh/id_ed25519", str(repo.key.private))
    proc = _bash(sign, repo.root, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().startswith("ok")
    assert git(repo.root, "status", "--porcelain", "--untracked-files=all") == (
        f"?? goals/{repo.goal_id}.approval"
    )
    check = _snippet("### Checking an approval with ssh-keygen")
    check = check.replace("fix-login", repo.goal_id).replace("alice@example.com", OWNER)
    proc = _bash(check, repo.root, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'Good "harness" signature for {OWNER}' in proc.stdout + proc.stderr
    assert git(repo.root, "status", "--porcelain", "--untracked-files=all") == (
        f"?? goals/{repo.goal_id}.approval"
    )
