"""loop/contain/reach.py and loop/unrunnable.py: where a step's program is, whether a
contained step sees it, what a build that could not run says; real bwrap where it runs."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.loop.contain.place import Place
from harness.loop.contain.reach import OPTIONS, Hidden, hidden, locate, mounts
from harness.loop.contain.sandbox import Sandbox, bwrap_argv, contain, resolve
from harness.loop.steps import StepResult, run_step
from harness.loop.unrunnable import Program, unrunnable_detail
from tests.loop.test_sandbox import place_in
from tests.tools import needs_bwrap

# hidden() reads bwrap's command line, never runs it: any name does without a bwrap.
BOX = Sandbox("required", "bwrap", shutil.which("bwrap") or "bwrap")
BARE = Sandbox("off", "off", reason="sandbox: off in the configuration")


@pytest.fixture
def tmp_bin() -> Iterator[Path]:
    """A folder under /tmp itself, whatever TMPDIR says: each contained step's /tmp is empty."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="harness-test-bin-") as folder:
        yield Path(folder)


def _program(folder: Path, name: str = "agent", text: str = "#!/bin/sh\necho hi\n") -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


# --- a contained command that cannot start reads as a bare one ------------------------


def run_contained(place: Place, argv: list[str]) -> StepResult:
    """`argv` as a build of `place` runs it (loop/execute.py), under bwrap."""
    sandbox = resolve("required", os.environ)
    with contain(sandbox, place, argv, {"PATH": os.defpath}, writable=True) as box:
        return run_step(box.argv, place.worktree, box.env, b"", 30, bwrap=box.bwrap)


@needs_bwrap
def test_a_contained_program_that_cannot_start_exits_127_or_126_as_bare(
    tmp_path: Path, tmp_bin: Path
) -> None:
    """bwrap itself exits 1 when execvp fails; the step reads as the shell's 127 (not found:
    not on PATH, or under a /tmp the step does not see) or 126 (not executable)."""
    place = place_in(tmp_path)
    missing = run_contained(place, ["no-such-agent-7f3a"])
    assert (missing.exit_code, missing.output_tail) == (
        127,
        "bwrap: execvp no-such-agent-7f3a: No such file or directory\n",
    )
    under_tmp = run_contained(place, [str(_program(tmp_bin))])
    assert under_tmp.exit_code == 127
    (place.worktree / "plain.sh").write_text("#!/bin/sh\n")
    not_executable = run_contained(place, ["./plain.sh"])
    assert (not_executable.exit_code, not_executable.output_tail) == (
        126,
        "bwrap: execvp ./plain.sh: Permission denied\n",
    )
    # Only bwrap's line alone is read so: a command that started and said more is its exit.
    said = "echo started; echo bwrap: execvp x: No such file or directory; exit 1"
    assert run_contained(place, ["sh", "-c", said]).exit_code == 1


# --- what a build's bwrap command line hides ---------------------------------------------


def test_every_option_of_a_builds_command_line_is_read(tmp_path: Path, tmp_bin: Path) -> None:
    """mounts() knows each option bwrap_argv writes, so no value is read as an option."""
    place = place_in(tmp_path, binds=(str(tmp_bin), "rw:~/.cache"))
    for network in (True, False):
        argv = bwrap_argv(
            "bwrap", place, ["true"], work=place.worktree, scratch=None, network=network
        )
        options = {arg for arg in argv[: argv.index("--")] if arg.startswith("--")}
        assert options <= OPTIONS, options - OPTIONS
        found = mounts(argv)
        assert found[0].target == Path("/") and found[0].shows
        assert found[-1].target == place.worktree.resolve()


def _place(tmp_path: Path, binds: tuple[str, ...] = ()) -> Place:
    """A new repository's place for each call, below `tmp_path`."""
    base = Path(tempfile.mkdtemp(dir=tmp_path, prefix="place-"))
    return place_in(base, env={"HOME": str(tmp_path / "home")}, binds=binds)


def test_a_program_under_tmp_is_hidden_by_the_steps_own_tmp(tmp_path: Path, tmp_bin: Path) -> None:
    agent = _program(tmp_bin)
    found = hidden(BOX, _place(tmp_path), agent)
    assert found == Hidden(agent, Path("/tmp").resolve(), "/tmp")
    assert found.describe() == "/tmp is empty in the sandbox"
    assert found.fix() == (
        f"add {tmp_bin} to sandbox_binds in .harness/config.yaml, or install it outside /tmp"
    )
    # Shown by a bind, or not contained at all: nothing hides it.
    assert hidden(BOX, _place(tmp_path, (str(tmp_bin),)), agent) is None
    assert hidden(BARE, _place(tmp_path), agent) is None


def test_what_the_sandbox_shows_is_not_hidden(tmp_path: Path) -> None:
    place = _place(tmp_path)
    in_worktree = _program(place.worktree)
    assert hidden(BOX, place, in_worktree) is None
    assert hidden(BOX, place, Path(sys.executable)) is None
    assert hidden(BOX, place, Path("/bin/sh")) is None


def test_a_hidden_folder_is_named_and_cannot_be_bound(tmp_path: Path) -> None:
    place = _place(tmp_path)
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    found = hidden(BOX, place, _program(ssh))
    assert found is not None and (found.folder, found.what) == (ssh.resolve(), "~/.ssh")
    assert found.describe() == f"{ssh.resolve()} (~/.ssh) is hidden in the sandbox"
    assert found.fix() == f"install it outside {ssh.resolve()}"


def test_a_script_whose_interpreter_lies_under_tmp_is_hidden_by_it(
    tmp_path: Path, tmp_bin: Path
) -> None:
    place = _place(tmp_path)
    python = tmp_bin / "python"
    python.symlink_to(sys.executable)
    script = _program(place.worktree, "agent.py", f"#!{python}\nprint('hi')\n")
    found = hidden(BOX, place, script)
    assert found == Hidden(python, Path("/tmp").resolve(), "/tmp", interpreter=True)


def test_locate_looks_on_path_or_relative_to_the_worktree(tmp_path: Path) -> None:
    agent = _program(tmp_path)
    assert locate("agent", Path("/"), str(tmp_path)) == agent
    assert locate("./agent", tmp_path, "") == tmp_path / "agent"
    assert locate("agent", tmp_path, "/nonexistent") is None
    assert locate("./missing", tmp_path, str(tmp_path)) is None


# --- the agent_unavailable gate's detail ---------------------------------------------------


DETAIL_CASES = [
    (
        ["claude", "-p"],
        "/usr/bin:/bin",
        False,
        127,
        "harness: cannot run 'claude': No such file or directory\n",
        "build.run exited 127 (command not found): `claude` is not on the runner's PATH "
        "(/usr/bin:/bin); install it, or give its full path in build.run; then `harness "
        "unpark g1 --key K` runs the build again (it said: harness: cannot run 'claude': "
        "No such file or directory)",
    ),
    (
        ["./agent.sh"],
        "/bin",
        False,
        127,
        "",
        "build.run exited 127 (command not found): `./agent.sh` does not exist; install "
        "it, or give its full path in build.run; then `harness unpark g1 --key K` runs "
        "the build again",
    ),
    (
        ["agent"],
        "{bin}",
        True,
        127,
        "bwrap: execvp agent: No such file or directory\n",
        "build.run exited 127 (command not found): `agent` is {bin}/agent on the "
        "runner's PATH, but contained steps do not see it: /tmp is empty in the "
        "sandbox; add {bin} to sandbox_binds in .harness/config.yaml, or install it "
        "outside /tmp; then `harness unpark g1 --key K` runs the build again (it said: "
        "bwrap: execvp agent: No such file or directory)",
    ),
    (
        ["./plain.sh"],
        "/bin",
        False,
        126,
        "harness: cannot run './plain.sh': Permission denied\n",
        "build.run exited 126 (command not executable): `./plain.sh` is {wt}/plain.sh, "
        "which is not an executable file; make it executable (chmod +x {wt}/plain.sh), "
        "or correct build.run; then `harness unpark g1 --key K` runs the build again (it "
        "said: harness: cannot run './plain.sh': Permission denied)",
    ),
    (
        ["./wrapper.sh"],
        "/bin",
        True,
        127,
        "starting\n./wrapper.sh: 2: claude: not found\n\n",
        "build.run exited 127 (command not found): `./wrapper.sh` is {wt}/wrapper.sh; a "
        "command it runs was not found; install what it runs; then `harness unpark g1 "
        "--key K` runs the build again (it said: ./wrapper.sh: 2: claude: not found)",
    ),
]


@pytest.mark.parametrize(("argv", "path", "contained", "code", "output", "detail"), DETAIL_CASES)
def test_the_detail_names_the_program_why_and_the_fix(
    tmp_path: Path,
    tmp_bin: Path,
    argv: list[str],
    path: str,
    contained: bool,
    code: int,
    output: str,
    detail: str,
) -> None:
    place = _place(tmp_path)
    wt = place.worktree
    _program(tmp_bin)
    (wt / "plain.sh").write_text("#!/bin/sh\n")
    _program(wt, "wrapper.sh", "#!/bin/sh\nclaude\n")
    env = {"PATH": path.format(bin=tmp_bin)}
    program = Program.find(argv, wt, env, BOX if contained else BARE, place)
    expected = detail.format(bin=tmp_bin, wt=wt)
    assert unrunnable_detail(program, code, output, "g1") == expected


def test_a_program_found_on_path_is_found_where_it_runs(tmp_bin: Path) -> None:
    agent = _program(tmp_bin)
    assert locate("agent", Path("/"), f"/nonexistent{os.pathsep}{tmp_bin}") == agent
