"""steps.run_step with real child processes: env, stdin, exit codes, timeouts, capture."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.loop import steps
from harness.loop.steps import ALWAYS_SCRUBBED, GIT_LOCATION_VARS, StepResult, child_env, run_step

BASE_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _script(tmp_path: Path, body: str, name: str = "child.py") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def _run(tmp_path: Path, body: str, timeout_s: float = 20, **kwargs: Any) -> StepResult:
    return run_step(_script(tmp_path, body), tmp_path, BASE_ENV, b"", timeout_s, **kwargs)


# A stand-in for bwrap that keeps its gate (contain/gate.py) as bwrap does: it writes its
# info, waits for the harness's byte, then runs the script it was given as its command.
STAND_IN = f"""#!{sys.executable}
import os, runpy, sys
_, info_fd, info, block_fd, block, script = sys.argv
assert (info_fd, block_fd) == ("--info-fd", "--block-fd"), sys.argv
os.write(int(info), b'{{"child-pid": 1}}')
os.close(int(info))
assert os.read(int(block), 1) == b"g"
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


def _run_as_bwrap(tmp_path: Path, body: str) -> StepResult:
    """`body` as the command of a stand-in bwrap: what run_step reads from bwrap's exits."""
    stand_in = tmp_path / "bwrap"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    argv = [str(stand_in), _script(tmp_path, body)[1]]
    return run_step(argv, tmp_path, BASE_ENV, b"", 20, bwrap=True)


def _gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie our init has not reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc: the process is there and not known to be a zombie
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return _gone(pid)


@pytest.fixture
def stray_pids() -> Iterator[list[int]]:
    """Pids a test learned about; killed afterwards so a failing test leaves nothing."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# --- environment ---------------------------------------------------------------------

SECRET_BASE = {
    **BASE_ENV,
    **{name: "leak" for name in ALWAYS_SCRUBBED},
    **{name: "/elsewhere" for name in GIT_LOCATION_VARS},
    "MY_TOKEN": "leak",
    "KEEP_ME": "kept",
}
# The runner's OpenTelemetry exporter: its collector and the credentials it sends there.
OTEL_BASE = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:leak@collector:4318",
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=leak",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-token=leak",
    "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/keys/leak.pem",
    "OTEL_SERVICE_NAME": "kept",  # not the exporter's: a step's own tools may read it
}


def test_child_env_drops_secrets_git_location_and_scrub_list() -> None:
    env = child_env(SECRET_BASE, ["MY_TOKEN"], {"HARNESS_GOAL": "g1"})
    assert env == {**BASE_ENV, "KEEP_ME": "kept", "HARNESS_GOAL": "g1"}


def test_child_process_never_sees_secrets(tmp_path: Path) -> None:
    env = child_env(SECRET_BASE, ["MY_TOKEN"], {"HARNESS_GOAL": "g1", "HARNESS_ITERATION": "2"})
    argv = _script(tmp_path, "import json, os; print(json.dumps(dict(os.environ)))")
    seen = json.loads(run_step(argv, tmp_path, env, b"", 20).stdout_tail)
    assert "leak" not in seen.values()
    assert "/elsewhere" not in seen.values()
    assert seen["KEEP_ME"] == "kept"
    assert (seen["HARNESS_GOAL"], seen["HARNESS_ITERATION"]) == ("g1", "2")


def test_run_step_scrubs_secrets_even_when_caller_passes_them(tmp_path: Path) -> None:
    argv = _script(tmp_path, "import json, os; print(json.dumps(sorted(os.environ)))")
    seen = json.loads(run_step(argv, tmp_path, SECRET_BASE | OTEL_BASE, b"", 20).stdout_tail)
    assert not set(ALWAYS_SCRUBBED) & set(seen)
    assert [name for name in seen if name.startswith("OTEL_")] == ["OTEL_SERVICE_NAME"]


def test_child_env_drops_the_runner_s_otlp_exporter_settings() -> None:
    env = child_env(BASE_ENV | OTEL_BASE, [], {})
    assert env == {**BASE_ENV, "OTEL_SERVICE_NAME": "kept"}


# --- stdin, cwd, exit codes ------------------------------------------------------------


def test_stdin_is_delivered(tmp_path: Path) -> None:
    argv = _script(tmp_path, "import sys; sys.stdout.write(sys.stdin.read().upper())")
    result = run_step(argv, tmp_path, BASE_ENV, "the prompt é\n".encode(), 20)
    assert result.stdout_tail == "THE PROMPT É\n"


def test_large_stdin_the_child_never_reads_does_not_block(tmp_path: Path) -> None:
    argv = _script(tmp_path, "print('ignored stdin')")
    result = run_step(argv, tmp_path, BASE_ENV, b"x" * 5_000_000, 20)
    assert (result.exit_code, result.timed_out) == (0, False)


def test_child_runs_in_cwd(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = _script(tmp_path, "import os; print(os.getcwd())")
    assert run_step(argv, work, BASE_ENV, b"", 20).stdout_tail == f"{work.resolve()}\n"


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_exit_code_is_reported(tmp_path: Path, code: int) -> None:
    result = _run(tmp_path, f"raise SystemExit({code})")
    assert (result.exit_code, result.timed_out) == (code, False)


def test_killed_by_signal_has_no_exit_code(tmp_path: Path) -> None:
    result = _run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert (result.exit_code, result.timed_out) == (None, False)


@pytest.mark.parametrize(
    ("exits", "read"),
    [
        (137, (None, "SIGKILL")),  # bwrap's own exit for a command killed by SIGKILL
        (143, (None, "SIGTERM")),
        (128 + signal.NSIG - 1, (None, steps._signal_name(1 - signal.NSIG))),
        (0, (0, None)),
        (1, (1, None)),  # bwrap's own failure (a mount it could not make)
        (128, (128, None)),
        (128 + signal.NSIG, (128 + signal.NSIG, None)),
        (255, (255, None)),
    ],
)
def test_under_bwrap_exit_128_plus_n_reads_as_signal_n(
    tmp_path: Path, exits: int, read: tuple[int | None, str | None]
) -> None:
    """bwrap exits 128+N when its command dies by signal N, and 0.8.0 tells no more (its
    --json-status-fd says `"exit-code": 137` for `kill -KILL` and `exit 137` alike), so a
    contained step's 128+N is read as the signal; the same exit of a bare step is an exit."""
    result = _run_as_bwrap(tmp_path, f"raise SystemExit({exits})")
    assert (result.exit_code, result.signal, result.timed_out) == (*read, False)
    bare = _run(tmp_path, f"raise SystemExit({exits})")
    assert (bare.exit_code, bare.signal) == (exits, None)


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("bwrap: execvp claude: No such file or directory\n", 127),
        ("bwrap: execvp ./agent.sh: Permission denied\n", 126),
        ("bwrap: execvp agent: Exec format error\n", 126),
        ("started\nbwrap: execvp claude: No such file or directory\n", 1),  # it ran
        ("bwrap: Can't mount tmpfs on /newroot/tmp: Operation not permitted\n", 1),
    ],
)
def test_under_bwrap_a_command_that_did_not_start_reads_as_127_or_126(
    tmp_path: Path, said: str, read: int
) -> None:
    """bwrap exits 1 when execvp fails, saying only `bwrap: execvp <name>: <why>`: read as
    the shell's 127 (not found) or 126 (any other reason), as a bare step's is."""
    body = f"import sys; sys.stderr.write({said!r}); raise SystemExit(1)"
    assert _run_as_bwrap(tmp_path, body).exit_code == read
    assert _run(tmp_path, body).exit_code == 1


def test_empty_argv_is_a_bug() -> None:
    with pytest.raises(ValueError, match="empty argv"):
        run_step([], Path("."), BASE_ENV, b"", 1)


# --- commands that cannot start ------------------------------------------------------


def test_command_not_found_is_127(tmp_path: Path) -> None:
    result = run_step(["no-such-command-xyz"], tmp_path, BASE_ENV, b"", 5)
    assert result.exit_code == 127
    assert result.output_tail == (
        "harness: cannot run 'no-such-command-xyz': No such file or directory\n"
    )
    assert not result.timed_out


def test_command_not_executable_is_126(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run_step([str(script)], tmp_path, BASE_ENV, b"", 5)
    assert result.exit_code == 126
    assert result.output_tail == f"harness: cannot run {str(script)!r}: Permission denied\n"


def test_missing_cwd_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = run_step(["sh", "-c", "true"], missing, BASE_ENV, b"", 5)
    assert result.exit_code == 127
    assert f"in {str(missing)!r}: No such file or directory" in result.output_tail


# --- capture -------------------------------------------------------------------------


def test_stdout_tail_is_stdout_only_and_output_tail_interleaves(tmp_path: Path) -> None:
    # The sleeps let each write arrive before the next, so the read order is the written one.
    body = """
        import sys, time
        for stream, text in ((sys.stdout, "out1"), (sys.stderr, "err1"), (sys.stdout, "out2")):
            stream.write(text + "\\n"); stream.flush(); time.sleep(0.1)
    """
    result = _run(tmp_path, body)
    assert result.stdout_tail == "out1\nout2\n"
    assert result.output_tail == "out1\nerr1\nout2\n"
    assert not result.stdout_truncated


def test_huge_output_is_bounded_and_marked_without_deadlock(tmp_path: Path) -> None:
    # 5 MB on stderr first: a runner that read only stdout would block here forever.
    body = """
        import sys
        sys.stderr.write("e" * 5_000_000); sys.stderr.flush()
        sys.stdout.write("o" * 5_000_000 + "END\\n")
    """
    result = _run(tmp_path, body, tail_bytes=1_000, stdout_keep_bytes=2_000)
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.stdout_truncated
    assert result.stdout_tail == "[… 4998004 bytes truncated]\n" + "o" * 1_996 + "END\n"
    assert result.output_tail == "[… 9999004 bytes truncated]\n" + "o" * 996 + "END\n"


def test_cut_inside_a_utf8_character_leaves_no_replacement_char(tmp_path: Path) -> None:
    result = _run(tmp_path, "import sys; sys.stdout.write('é' * 1000)", stdout_keep_bytes=101)
    # 101 kept bytes start mid-character: the stray byte is dropped and counted.
    assert result.stdout_tail == "[… 1900 bytes truncated]\n" + "é" * 50


# --- timeouts and process groups ------------------------------------------------------

SPAWN_GRANDCHILD = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from pathlib import Path
    grandchild = subprocess.Popen(["sleep", "60"])
    tmp = Path("pids.tmp")
    tmp.write_text(f"{os.getpid()} {grandchild.pid}")
    tmp.rename("pids")
"""
)


def _pids(tmp_path: Path) -> tuple[int, int]:
    child, grandchild = (tmp_path / "pids").read_text().split()
    return int(child), int(grandchild)


class JumpClock:
    """The step's clock, as the test controls it: the machine's monotonic time, until
    `when()` has held at two reads; from then on `by` seconds later, as if the step had
    run that long. The second read, not the first, so a step that ends at the moment
    `when()` comes true (its child's exit) sees the jump only after that end."""

    def __init__(self, when: Callable[[], bool], by: float = 600.0) -> None:
        self.when, self.by = when, by
        self.seen = 0
        self.offset = 0.0

    def __call__(self) -> float:
        if not self.offset:
            self.seen += self.when()
            self.offset = self.by if self.seen >= 2 else 0.0
        return time.monotonic() + self.offset


def _started(tmp_path: Path) -> Callable[[], bool]:
    """Whether the child has written its pids (and so started its grandchild)."""
    return (tmp_path / "pids").exists


def _child_exited(tmp_path: Path) -> Callable[[], bool]:
    return lambda: (tmp_path / "pids").exists() and _gone(_pids(tmp_path)[0])


def test_timeout_kills_the_whole_group(tmp_path: Path, stray_pids: list[int]) -> None:
    """The step's time runs out (on its clock) once the child and grandchild are up."""
    clock = JumpClock(_started(tmp_path))
    result = _run(tmp_path, SPAWN_GRANDCHILD + "time.sleep(60)\n", timeout_s=600, clock=clock)
    stray_pids.extend(_pids(tmp_path))
    assert (result.timed_out, result.exit_code, result.signal) == (True, None, None)
    assert result.duration_s >= 600
    assert _wait_gone(_pids(tmp_path)[0]) and _wait_gone(_pids(tmp_path)[1])


def test_without_waitid_the_group_is_still_killed(
    tmp_path: Path, stray_pids: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # macOS before Python 3.13 has no os.waitid; that path cannot be reached here otherwise.
    monkeypatch.setattr(steps, "HAVE_WAITID", False)
    result = _run(tmp_path, SPAWN_GRANDCHILD + "print('done')\n")
    stray_pids.extend(_pids(tmp_path))
    assert (result.exit_code, result.stdout_tail) == (0, "done\n")
    assert _wait_gone(_pids(tmp_path)[1]), "background grandchild outlived its step"
    timed_out = _run(tmp_path, SPAWN_GRANDCHILD + "time.sleep(60)\n", timeout_s=0.5)
    stray_pids.extend(_pids(tmp_path))
    assert (timed_out.timed_out, timed_out.exit_code) == (True, None)
    assert _wait_gone(_pids(tmp_path)[1]), "grandchild survived the timeout"


def test_timeout_escalates_to_sigkill(tmp_path: Path, stray_pids: list[int]) -> None:
    body = """
        import os, signal, time
        from pathlib import Path
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        Path("pid").write_text(str(os.getpid()))
        time.sleep(60)
    """
    clock = JumpClock((tmp_path / "pid").exists)
    result = _run(tmp_path, body, timeout_s=600, clock=clock)
    stray_pids.append(int((tmp_path / "pid").read_text()))
    assert (result.timed_out, result.exit_code) == (True, None)
    # SIGTERM was ignored: SIGKILL came only once the grace had passed on the step's clock.
    assert result.duration_s >= 600 + steps.GRACE_S
    assert _wait_gone(stray_pids[0])


def test_timeout_when_child_closed_its_output(tmp_path: Path) -> None:
    body = "import os, time; os.close(1); os.close(2); time.sleep(60)"
    result = _run(tmp_path, body, timeout_s=0.5)
    assert (result.timed_out, result.exit_code) == (True, None)


def test_background_process_is_killed_when_step_ends(tmp_path: Path, stray_pids: list[int]) -> None:
    """The step ends with its child: once the child is gone the step's clock jumps past
    its timeout, so a step the grandchild's pipes held open would end timed out."""
    clock = JumpClock(_child_exited(tmp_path))
    result = _run(tmp_path, SPAWN_GRANDCHILD + "print('done')\n", timeout_s=600, clock=clock)
    stray_pids.extend(_pids(tmp_path))
    assert not result.timed_out, "a grandchild holding the pipes held the step open"
    assert (result.exit_code, result.stdout_tail) == (0, "done\n")
    assert _wait_gone(_pids(tmp_path)[1]), "background grandchild outlived its step"


def test_escaped_process_holding_the_pipes_does_not_hang_the_step(
    tmp_path: Path, stray_pids: list[int]
) -> None:
    body = """
        import subprocess
        escaped = subprocess.Popen(["sleep", "60"], start_new_session=True)
        print(escaped.pid, flush=True)
    """
    result = _run(tmp_path, body, timeout_s=20)
    stray_pids.append(int(result.stdout_tail.split()[0]))
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.duration_s < 5


def test_interrupt_while_waiting_kills_the_group(tmp_path: Path, stray_pids: list[int]) -> None:
    def interrupting_clock() -> float:
        if (tmp_path / "pids").exists():
            raise KeyboardInterrupt
        return time.monotonic()

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, SPAWN_GRANDCHILD + "time.sleep(60)\n", clock=interrupting_clock)
    stray_pids.extend(_pids(tmp_path))
    child, grandchild = _pids(tmp_path)
    assert _wait_gone(child) and _wait_gone(grandchild)


def _jumping_clock(after_first: float) -> Callable[[], float]:
    calls = iter([0.0])
    return lambda: next(calls, after_first)


def test_timeout_and_duration_use_the_given_clock(tmp_path: Path) -> None:
    result = _run(tmp_path, "import time; time.sleep(3)", timeout_s=10, clock=_jumping_clock(100))
    assert (result.timed_out, result.duration_s) == (True, 100.0)
