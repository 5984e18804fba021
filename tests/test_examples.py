"""This repository's own example goals and example run stay valid, verifiable and replayable."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import __version__
from harness.commands.demo import DEMO_SECRET, GOAL_ID
from tests.agents.templates import template_goal
from tests.managed import harness_in
from tests.otlp import all_spans, attributes, parse_json, parse_json_as_is

ROOT = Path(__file__).resolve().parents[1]


def harness(*args: str, secret: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    if secret:
        env["HARNESS_SECRET"] = DEMO_SECRET
    return harness_in(ROOT, env, *args)


def test_example_goals_pass_check() -> None:
    proc = harness("check", secret=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = {p.stem for p in (ROOT / "goals").glob("example-*.yaml")}
    assert kinds == {
        "example-claude",
        "example-codex",
        "example-aider",
        "example-script",
        "example-nightly",
    }
    assert proc.stdout.strip().endswith(f"ok: {len(kinds) + 1} goal(s), 1 owner key(s)")


def test_example_ledger_verifies() -> None:
    proc = harness("verify", GOAL_ID)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"ok {GOAL_ID}: 10 events")
    assert "status parked_at_eyes" in proc.stdout


def test_example_report_is_the_replay() -> None:
    replay = harness("replay", GOAL_ID, "--format", "md")
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == (ROOT / "ledger" / GOAL_ID / "report.md").read_text()


def test_example_ledger_refuses_another_secret() -> None:
    env_secret = "not-the-demo-secret-0123456789abcdef0123456789"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "verify", GOAL_ID],
        cwd=ROOT,
        env=env | {"HARNESS_SECRET": env_secret},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3 and "MAC does not match" in proc.stdout


def test_example_trace_is_byte_stable_and_loads_with_opentelemetry_proto(tmp_path: Path) -> None:
    """`harness trace` of the example run: the same bytes on stdout and in --out, which
    opentelemetry-proto's JSON parser loads, with ids that are the ledger lines' hashes."""
    out = tmp_path / "trace.json"
    printed, written = harness("trace", GOAL_ID), harness("trace", GOAL_ID, "--out", str(out))
    assert printed.returncode == written.returncode == 0, printed.stderr + written.stderr
    assert printed.stdout.encode() == out.read_bytes() and written.stdout == ""
    assert len(all_spans(parse_json_as_is(printed.stdout))) == 4  # as written, hex ids and all
    request = parse_json(printed.stdout)
    (resource,) = request.resource_spans
    assert {a.key: a.value.string_value for a in resource.resource.attributes} == {
        "service.name": "goal-harness",
        "service.version": __version__,
        "harness.goal.id": GOAL_ID,
    }
    lines = (ROOT / "ledger" / GOAL_ID / "events" / "000001.jsonl").read_bytes().splitlines(True)
    hashes = [hashlib.sha256(line).hexdigest() for line in lines]
    found = all_spans(request)
    assert {span.trace_id.hex() for span in found} == {hashes[0][:32]}
    assert [span.span_id.hex() for span in found] == [hashes[i][:16] for i in (1, 3, 5, 7)]
    assert [span.name for span in found] == [f"invoke_agent {GOAL_ID}", "judge"] * 2
    assert [span.status.code for span in found] == [0, 2, 0, 0]  # unset, ERROR, unset, unset
    assert [attributes(span)["harness.step"] for span in found] == ["build", "judge"] * 2
    assert found[0].start_time_unix_nano == 1795994989162000000  # 2026-11-29T23:29:49.162Z


def test_example_trace_reads_the_same_without_the_secret_and_says_so() -> None:
    verified, unverified = harness("trace", GOAL_ID), harness("trace", GOAL_ID, secret=False)
    assert unverified.returncode == 0, unverified.stderr
    assert unverified.stdout == verified.stdout
    assert unverified.stderr == f"harness: {GOAL_ID}: unverified: no secret here: not checked\n"


def test_example_trace_refuses_another_secret_and_writes_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    out = tmp_path / "trace.json"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "trace", GOAL_ID, "--out", str(out)],
        cwd=ROOT,
        env=env | {"HARNESS_SECRET": "not-the-demo-secret-0123456789abcdef0123456789"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3 and "MAC does not match" in proc.stderr
    assert proc.stdout == "" and not out.exists()


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_example_goals_run_the_templates_command(agent: str) -> None:
    """goals/example-<agent>.yaml runs what `harness new --agent <agent>` writes (aider's
    with the files to edit added at the end)."""
    template = template_goal(agent)["build"]["run"]
    example = yaml.safe_load((ROOT / "goals" / f"example-{agent}.yaml").read_text())
    run = example["build"]["run"]
    if isinstance(template, list):
        assert run[:2] == template[:2] == ["sh", "-c"]
        assert run[2] == template[2] or run[2].startswith(template[2] + " "), run[2]
    else:
        assert run == template
