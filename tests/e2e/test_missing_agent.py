"""A build whose program cannot start (issue 30, item 3) through `python -m harness`: a
program that is not on PATH, bare, and one that is on the runner's PATH under /tmp, which a
contained step does not see. The goal stops at once at needs_attention / agent_unavailable
naming the program; no judge runs, no iteration is spent; `doctor` names it beforehand."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

MISSING = "no-such-agent-7f3a"
TS = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z"


def _shape(text: str) -> str:
    """Printed lines with timestamps as `T` and measured durations as `S`."""
    return re.sub(r" [0-9]+\.[0-9]s ", " Ss ", re.sub(TS, "T", text))


def _goal(program: str) -> dict[str, object]:
    goal = base_goal()
    goal["build"] = {"run": [program, "-p", "fix it"], "timeout": "60s"}
    return goal


def _event_types(repo: ManagedRepo) -> list[tuple[str, str | None]]:
    segment = repo.ledger_dir / "events" / "000001.jsonl"
    events = [json.loads(line)["e"] for line in segment.read_text().splitlines()]
    return [(event["type"], event["step"]) for event in events]


def _stopped(repo: ManagedRepo, detail: str) -> None:
    """The goal waits at agent_unavailable with `detail`; the build's round is not spent."""
    row = repo.status()
    assert (row["status"], row["gate"], row["step"], row["iteration"]) == (
        "needs_attention",
        "agent_unavailable",
        "build",
        1,
    )
    assert (row["budget_used"]["iterations"], row["budget_used"]["passes"]) == (0, 1)
    assert repo.count("judge") == []
    assert [t for t in _event_types(repo) if t[1] == "judge"] == []
    assert _event_types(repo)[-2:] == [("step.finished", "build"), ("goal.gated", None)]
    checked = repo.harness("status", "--check", check=11).stdout
    assert checked.endswith(f" gate=agent_unavailable {detail}\n")
    assert f"| gate detail | {detail} |\n" in (repo.ledger_dir / "report.md").read_text()


@pytest.mark.bare("the program is missing everywhere: no sandbox is needed to miss it")
def test_g3_a_build_whose_program_is_not_on_path_stops_at_agent_unavailable(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=_goal(MISSING))
    ran = repo.harness("run", check=0)
    path = repo.env["PATH"]
    detail = (
        f"build.run exited 127 (command not found): `{MISSING}` is not on the runner's PATH "
        f"({path}); install it, or give its full path in build.run; then `harness unpark g1 "
        f"--key K` runs the build again (it said: harness: cannot run '{MISSING}': No such "
        "file or directory)"
    )
    lines = _shape(ran.stdout).splitlines()
    assert lines[1:] == [
        "T g1 #2 build[1] started",
        "T g1 #3 build[1] unrunnable exit=127 Ss cost=$0.0000 turns=0 changed=0",
        f"T g1 #4 needs_attention gate=agent_unavailable ({detail})",
    ]
    _stopped(repo, detail)
    html = repo.harness("replay", "g1", "--format", "html", check=0).stdout
    assert "could not run (exit 127)" in html and "is not on the runner&#x27;s PATH" in html
    # A later run leaves it as it is: the loop never spins on a missing agent.
    assert repo.harness("run", check=0).stdout == ""
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")

    # doctor names it before any run would.
    doctor = repo.harness("doctor", check=2).stdout
    assert f"fail agent g1: {MISSING} not found on PATH\n" in doctor
    assert (
        f"  fix: install {MISSING}, or give its full path in build.run of goals/g1.yaml\n" in doctor
    )


@pytest.mark.bare("the program is missing everywhere: no sandbox is needed to miss it")
def test_g1_a_kill_before_the_gate_gates_on_the_next_run_without_a_second_build(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=_goal(MISSING))
    killed = repo.harness("run", env=repo.env | {"HARNESS_FAILPOINT": "after_append@3"})
    assert killed.returncode == -9
    assert _shape(killed.stdout).splitlines()[-1] == "T g1 #2 build[1] started"
    again = repo.harness("run", check=0)
    assert (
        _shape(again.stdout)
        .splitlines()[-1]
        .startswith("T g1 #4 needs_attention gate=agent_unavailable (build.run exited 127 ")
    ), again.stdout
    assert [t for t in _event_types(repo) if t == ("step.started", "build")] == [
        ("step.started", "build")
    ]
    assert repo.status()["gate"] == "agent_unavailable"


@pytest.fixture
def tmp_bin() -> Iterator[Path]:
    """A folder under /tmp itself (whatever TMPDIR says): the sandbox gives each step an
    empty /tmp, so what lies here is on the runner's PATH and not in a contained step's."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="harness-test-bin-") as folder:
        yield Path(folder)


FAKE_AGENT = """#!/bin/sh
echo "$HARNESS_ITERATION" >> "$TEST_COUNTER_DIR/build.log"
echo right > value.txt
"""


def test_g3_a_contained_build_whose_program_lies_under_tmp_names_the_hidden_folder(
    managed: ManagedFactory, contained: None, tmp_bin: Path
) -> None:
    agent = tmp_bin / "fake-agent"
    agent.write_text(FAKE_AGENT)
    agent.chmod(0o755)
    repo = managed(goal=_goal("fake-agent"))
    repo.env["PATH"] = f"{tmp_bin}{os.pathsep}{repo.env['PATH']}"
    ran = repo.harness("run", check=0)
    detail = (
        f"build.run exited 127 (command not found): `fake-agent` is {agent} on the runner's "
        "PATH, but contained steps do not see it: /tmp is empty in the sandbox; add "
        f"{tmp_bin} to sandbox_binds in .harness/config.yaml, or install it outside /tmp; "
        "then `harness unpark g1 --key K` runs the build again (it said: bwrap: execvp "
        "fake-agent: No such file or directory)"
    )
    lines = _shape(ran.stdout).splitlines()
    assert lines[2:] == [
        "T g1 #3 build[1] unrunnable exit=127 Ss cost=$0.0000 turns=0 changed=0",
        f"T g1 #4 needs_attention gate=agent_unavailable ({detail})",
    ]
    _stopped(repo, detail)
    assert repo.count("build") == []

    doctor = repo.harness("doctor", check=2).stdout
    assert (
        f"fail agent g1: fake-agent is {agent}, which contained steps do not see "
        "(/tmp is empty in the sandbox)\n" in doctor
    )
    assert (
        f"  fix: add {tmp_bin} to sandbox_binds in .harness/config.yaml, or install it "
        "outside /tmp\n" in doctor
    )

    # The owner shows the folder to the steps and unparks: the build runs at once, in the
    # same round, and the goal goes on to the judge.
    config = repo.root / ".harness" / "config.yaml"
    text = config.read_text()
    config.write_text(text.replace("sandbox_binds: [", f'sandbox_binds: ["{tmp_bin}", '))
    git(repo.root, "commit", "-qam", "show the agent's folder")
    assert f"ok agent g1: fake-agent at {agent}\n" in repo.harness("doctor").stdout
    decided = repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    assert "signed `unpark agent_unavailable`" in decided.stdout
    row = repo.status()
    assert (row["status"], row["gate"], row["iteration"]) == ("completed", None, 1)
    assert repo.count("build") == ["1"] and repo.count("judge") == ["1"]
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")


def test_doctor_says_ok_for_an_approved_goals_program_on_path(managed: ManagedFactory) -> None:
    repo = managed()
    doctor = repo.harness("doctor").stdout
    assert f"ok agent g1: {sys.executable}\n" in doctor
