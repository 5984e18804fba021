"""The README's walkthrough, pasted into bash as a new user would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.tools import needs_command

ROOT = Path(__file__).resolve().parents[2]


def walkthrough() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Five-minute walkthrough", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "README has no walkthrough block"
    return match.group(1)


@needs_command("ssh-keygen", "openssh-client")
def test_readme_walkthrough_runs(tmp_path: Path) -> None:
    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "greet completed step=- iteration=1" in proc.stdout
    assert re.search(r"^ok greet: 6 events, head 6:", proc.stdout, re.M)
    assert "| status | completed |" in proc.stdout
