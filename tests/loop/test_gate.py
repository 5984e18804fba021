"""contain/gate.py with the real bwrap: a contained build starts without a fork of the
harness, and its command runs only once the harness has seen bwrap arm its death signal."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.loop.contain import sandbox as sandbox_module
from harness.loop.contain.gate import Gate
from harness.loop.steps import run_step
from tests.tools import needs_bwrap


def _bwrap_writing(marker: Path) -> list[str]:
    """bwrap as a build runs it, its command writing `marker` (bound writable)."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    identity = sandbox_module._identity(bwrap)[0]
    folder = os.fspath(marker.parent)
    return [
        bwrap,
        *sandbox_module._base_args(identity),
        *("--bind", folder, folder),
        "--",
        "/bin/sh",
        "-c",
        f"echo ran > {marker}",
    ]


@needs_bwrap
def test_a_build_under_bwrap_runs_through_the_gate(tmp_path: Path) -> None:
    marker = tmp_path / "out" / "marker"
    marker.parent.mkdir()
    result = run_step(_bwrap_writing(marker), tmp_path, dict(os.environ), b"", 30, bwrap=True)
    assert (result.exit_code, result.output_tail) == (0, "")
    assert marker.read_text() == "ran\n"


@needs_bwrap
@pytest.mark.parametrize("read_info", [False, True], ids=["before-info", "after-info"])
def test_a_harness_gone_before_it_opened_the_gate_leaves_the_command_unrun(
    tmp_path: Path, read_info: bool
) -> None:
    """The harness killed after bwrap started but before the byte, before or after bwrap
    said its info: the harness's ends of both pipes close, as a killed process's do. bwrap
    still holds the byte's write end, so the sandbox's read never ends and the command
    never runs (bwrap's outer process dies of the closed info pipe or of its death signal);
    what is left is in the step's process group, for the next run to end
    (guards.ChildRecord). Given only the read end, the sandbox would read end of file and
    run the command unwatched."""
    marker = tmp_path / "out" / "marker"
    marker.parent.mkdir()
    gate = Gate()
    proc = subprocess.Popen(
        gate.argv(_bwrap_writing(marker)),
        pass_fds=gate.child_fds(),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        gate.started()
        while read_info and os.read(gate.info, 4096):
            pass
        gate.close()  # as the kernel closes a killed harness's descriptors
        time.sleep(1.0)
        assert not marker.exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not marker.exists()


@needs_bwrap
def test_bwrap_that_fails_before_its_sandbox_does_not_hang_at_the_gate(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    started = time.monotonic()
    result = run_step([bwrap, "--no-such-option", "true"], tmp_path, {}, b"", 30, bwrap=True)
    assert time.monotonic() - started < 10
    assert result.exit_code == 1
    assert "--no-such-option" in result.output_tail


@needs_bwrap
def test_bwrap_whose_sandbox_fails_reads_as_its_failure(tmp_path: Path) -> None:
    """bwrap's outer process says its info, then the sandbox fails to mount: the byte finds
    no command to let run, and the step is bwrap's exit 1 with its message."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    identity = sandbox_module._identity(bwrap)[0]
    missing = os.fspath(tmp_path / "missing")
    argv = [bwrap, *sandbox_module._base_args(identity), "--ro-bind", missing, missing, "true"]
    result = run_step(argv, tmp_path, {}, b"", 30, bwrap=True)
    assert result.exit_code == 1
    assert "missing" in result.output_tail


def test_the_gate_keeps_its_pipes_above_the_standard_streams() -> None:
    """A harness started with stdin, stdout and stderr closed (`harness run <&- >&- 2>&-`)
    gets its pipes at 0-2, where the child's own streams go: the gate moves them up."""
    probe = (
        "import os\n"
        "from harness.loop.contain.gate import Gate\n"
        "for fd in (0, 1, 2):\n"
        "    os.close(fd)\n"
        "gate = Gate()\n"
        "fds = (gate.info, *gate.child_fds())\n"
        "os.write(os.open(os.environ['OUT'], os.O_WRONLY), repr(fds).encode())\n"
    )
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(
            [sys.executable, "-c", probe], env=os.environ | {"OUT": out.name}, check=True
        )
        fds = ast.literal_eval(Path(out.name).read_text())
    assert len(set(fds)) == 4 and min(fds) >= 3, fds
