"""What the commands print: JSON documents, the GitHub job summary, the terminal progress line."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

from tests.managed import ManagedFactory, base_goal


def test_run_json_is_one_document(managed: ManagedFactory) -> None:
    repo = managed()
    proc = repo.harness("run", "--json", check=0)
    document = json.loads(proc.stdout)
    goal = document["goals"][0]
    assert (document["exit_code"], goal["id"], goal["status"]) == (0, "g1", "completed")
    assert "".join(goal["lines"]) == repo.harness("replay", "g1", check=0).stdout


def test_verify_json_names_segment_and_line(managed: ManagedFactory) -> None:
    repo = managed()
    repo.harness("run", check=0)
    ok = json.loads(repo.harness("verify", "--json", check=0).stdout)
    assert ok["ok"] and ok["goals"][0]["events"] == 10 and ok["goals"][0]["segments"] == 1
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    lines = segment.read_bytes().splitlines(keepends=True)
    lines[6] = lines[6].replace(b'"turns":2', b'"turns":9')
    segment.write_bytes(b"".join(lines))
    bad = json.loads(repo.harness("verify", "--json", check=3).stdout)
    failure = bad["goals"][0]["failure"]
    assert (failure["segment"], failure["line"]) == ("000001.jsonl", 7)


def test_check_json(managed: ManagedFactory) -> None:
    repo = managed()
    document = json.loads(repo.harness("check", "--json", check=0).stdout)
    assert document["ok"] and document["goals"] == 1 and document["problems"] == []


def test_github_step_summary_gets_each_advanced_goal(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed()
    summary = tmp_path / "summary.md"
    repo.harness("run", env=repo.env | {"GITHUB_STEP_SUMMARY": str(summary)}, check=0)
    assert "# Goal `g1`" in summary.read_text() and "| status | completed |" in summary.read_text()
    before = summary.read_text()
    repo.harness("run", env=repo.env | {"GITHUB_STEP_SUMMARY": str(summary)}, check=0)
    assert summary.read_text() == before  # nothing advanced, nothing added


def test_progress_line_only_on_a_terminal_and_stdout_unchanged(managed: ManagedFactory) -> None:
    goal = base_goal() | {"judge": {"run": [sys.executable, "-c", "import time; time.sleep(1.5)"]}}
    repo = managed(goal=goal, mode="fix-on-1")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--max-steps", "3"],
        cwd=repo.root,
        env=repo.env,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    chunks: list[bytes] = []

    def drain() -> None:  # a terminal's buffer is small: read it while the run goes on
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout, _ = proc.communicate(timeout=60)
    reader.join(timeout=5)
    seen = b"".join(chunks)
    assert proc.returncode == 0
    assert b"g1 judge[1] 00:0" in seen and b"passes" in seen
    assert stdout.decode() == repo.harness("replay", "g1", check=0).stdout
