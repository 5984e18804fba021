"""A step whose covered socket vanished before bwrap's mounts starts again (execute.py,
`StepCommands.run_contained`; sandbox.md, "Sockets"), for a build and a lesson's check: the
goal is driven in this process, contained, with a real server under /run that goes away
right after the walk found it, before the real bwrap starts."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.loop import execute, lesson_checks
from harness.loop import steps as steps_module
from tests.inprocess import InProcess
from tests.managed import ManagedFactory, base_goal
from tests.tools import need_tool

LESSON = "version: 1\nwhen:\n  keywords: [value]\ntext: |\n  Keep the value right.\n"
CHECKED = LESSON + "check:\n  run: [test, -s, value.txt]\n"


@pytest.fixture
def service() -> Iterator[Path]:
    """A listening socket under /run, as a host's service has one; removed by the test."""
    if not os.access("/run", os.W_OK):
        need_tool("needs a writable /run for a test socket (run the suite as root)")
    folder = Path(f"/run/harness-vanish-step-{os.getpid()}")
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(folder / "service.sock"))
        server.listen()
        yield folder / "service.sock"
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def racing(real: Callable[..., Any], path: Path, starts: list[bool]) -> Callable[..., Any]:
    """`run_step` as the host's churn meets it: the first start whose bwrap was to cover
    `path` finds it gone (the service removed it after the walk); every start is noted."""

    def run_step(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        starts.append(str(path) in argv)
        if path.exists():
            path.unlink()
            path.parent.rmdir()
        return real(argv, *args, **kwargs)

    return run_step


@pytest.mark.parametrize("where", ["build", "lesson-check"])
def test_a_step_whose_socket_vanished_starts_again_and_runs_once(
    contained_steps: str,
    managed: ManagedFactory,
    service: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    if contained_steps == "off":
        pytest.skip("HARNESS_TEST_SANDBOX=off: no bwrap, no mounts to miss")
    here = InProcess(managed(mode="fix-on-1", files={"lessons/keep.yaml": CHECKED}))
    module = execute if where == "build" else lesson_checks
    starts: list[bool] = []
    monkeypatch.setattr(module, "run_step", racing(module.run_step, service, starts))
    cell = here.runner().advance()
    # The first start was to cover the socket, and bwrap stopped before its command; the
    # second walked /run again and started the step. (Another test's socket may vanish
    # too: the suite's attack tests make them beside this one.)
    assert starts[0] and len(starts) >= 2 and not any(starts[1:]), starts
    events = here.events()
    ran = [(e.type, e.step, e.data.get("output_tail")) for e in events]
    assert (cell.status, cell.iteration, cell.gate) == ("completed", 1, None), ran
    assert here.repo.count("build") == ["1"] and here.repo.count("judge") == ["1"]
    finished = [(e.step, e.data["exit_code"]) for e in events if e.type == "step.finished"]
    assert finished == [("build", 0), ("judge", 0)]
    checked = [e.data for e in events if e.type == "lesson.checked"]
    assert [(c["name"], c["passed"], c["exit_code"]) for c in checked] == [("keep", True, 0)]


@pytest.mark.parametrize(("code", "started"), [(2, ["build", "judge"]), (1, ["build", "build"])])
def test_a_command_that_prints_bwraps_line_is_started_again_only_as_bwrap_exits(
    contained_steps: str,
    managed: ManagedFactory,
    service: Path,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    started: list[str],
) -> None:
    """A build that ran, printed nothing but bwrap's line for the covered socket, and ended
    while the host removed that socket: with any exit but bwrap's 1 it is a failed build,
    run once. With exit 1 it passes for a start that never ran and is started again: the
    case sandbox.md ("Sockets") leaves open, pinned here so that closing it shows."""
    if contained_steps == "off":
        pytest.skip("HARNESS_TEST_SANDBOX=off: no bwrap, no mounts to miss")
    line = f"bwrap: Can't mkdir parents for {service}: Read-only file system"
    # sh, not Python: under scripts/test, a Python whose code names "harness" starts coverage.
    forged = ["sh", "-c", 'printf "%s\\n" "$0" >&2; exit "$1"', line, str(code)]
    goal = base_goal() | {"build": {"run": forged, "timeout": "60s"}}
    here = InProcess(managed(goal=goal))
    real, steps = steps_module.run_step, []

    def run_step(argv: list[str], cwd: Path, env: dict[str, str], *args: Any, **kwargs: Any) -> Any:
        steps.append(env["HARNESS_STEP"])
        result = real(argv, cwd, env, *args, **kwargs)
        if service.exists():  # the host removes it while the build runs
            service.unlink()
            service.parent.rmdir()
        return result

    monkeypatch.setattr(execute, "run_step", run_step)
    here.runner(max_steps=2).advance()
    assert steps[:2] == started
    first = next(e for e in here.events() if e.type == "step.finished")
    assert (first.step, first.data["exit_code"]) == ("build", code)
