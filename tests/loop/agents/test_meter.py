"""agents.meter: a real step's stdout parsed as it arrives, and the tool's records after a kill."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from harness.loop.agents import Meter, parse_output
from harness.loop.agents.records import claude_project_dir
from harness.loop.steps import child_env, run_step
from harness.model.config import Prices
from tests.loop.agents.captures import DATA, all_outputs

# Replays a captured record with every timestamp set to now, prints a captured stdout,
# then hangs until the step's timeout kills it: a tool killed after paid calls.
KILLED_TOOL = r"""
import json, re, sys, time
from datetime import datetime, timezone
record, target, stdout = sys.argv[1:4]
now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
text = re.sub(r'"timestamp":"[^"]*"', f'"timestamp":"{now}"', open(record).read())
open(target, "w").write(text)
sys.stdout.write(open(stdout).read())
sys.stdout.flush()
time.sleep(60)
"""


@pytest.mark.parametrize(("fmt", "path"), all_outputs())
def test_a_real_process_output_is_parsed_as_it_arrives(tmp_path: Path, fmt: str, path: str) -> None:
    capture = DATA / path
    meter = Meter(fmt, {}, tmp_path, time.time())
    cat = [
        sys.executable,
        "-c",
        "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
        str(capture),
    ]
    # a tail far smaller than the output: nothing depends on it any more
    result = run_step(
        cat,
        tmp_path,
        child_env(os.environ, [], {}),
        b"",
        20,
        stdout_keep_bytes=64,
        on_stdout=meter.feed,
    )
    assert result.exit_code == 0
    assert meter.finish() == parse_output(fmt, capture.read_text())


def _killed(meter: Meter, env: dict[str, str], record: Path, target: Path, stdout: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", KILLED_TOOL, str(record), str(target), str(stdout)]
    return_env = child_env(os.environ, [], env)
    result = run_step(argv, target.parent, return_env, b"", 3, on_stdout=meter.feed)
    assert result.timed_out


def test_claude_killed_by_its_timeout_counts_its_recorded_cost(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    meter = Meter("claude-json", env, tmp_path, time.time())
    target = claude_project_dir(tmp_path / "home" / ".claude", tmp_path) / "s.jsonl"
    _killed(meter, env, DATA / "claude/kill-transcript.jsonl", target, DATA / "claude/kill.out")
    usage = meter.finish()
    assert (usage.cost_usd, usage.turns, usage.session) == (
        0.0204,
        2,
        "3420ccca-1a1b-44db-ba74-ea6550eec6ff",
    )
    assert (
        usage.evidence
        == "no result printed: claude transcript since the step began (cost-state totals)"
    )


def test_claude_killed_without_cost_state_prices_its_tokens(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    record = tmp_path / "no-cost-state.jsonl"
    lines = (DATA / "claude/kill-transcript.jsonl").read_text().splitlines(keepends=True)
    record.write_text("".join(line for line in lines if '"type":"cost-state"' not in line))
    target = claude_project_dir(tmp_path / "home" / ".claude", tmp_path) / "s.jsonl"
    meter = Meter("claude-json", env, tmp_path, time.time())
    _killed(meter, env, record, target, DATA / "claude/kill.out")
    usage = meter.finish()
    # 4100 input and 200 output tokens at the ceiling rates ($6.25 and $25 per million)
    assert usage.cost_usd == pytest.approx(0.030625)
    assert usage.turns == 2
    meter = Meter("claude-json", env, tmp_path, time.time(), Prices(4.0, 0.4, 20.0))
    _killed(meter, env, record, target, DATA / "claude/kill.out")
    assert meter.finish().cost_usd == pytest.approx(0.0204)


def test_codex_killed_mid_turn_counts_its_recorded_tokens(tmp_path: Path) -> None:
    thread = "01a230db-1c3a-72a3-8dac-091bcec6f29f"
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")}
    rollout = f"rollout-2026-12-01T09-06-35-{thread}.jsonl"
    target = tmp_path / "codex" / "sessions" / "2026" / "12" / "01" / rollout
    meter = Meter("codex-jsonl", env, tmp_path, time.time())
    _killed(meter, env, DATA / "codex" / rollout, target, DATA / "codex/kill.out")
    usage = meter.finish()
    assert (usage.turns, usage.tokens, usage.tokens_scope, usage.session) == (
        1,
        (2000, 0, 100),
        "process",
        thread,
    )
    assert usage.session_tokens == (2000, 0, 100)
