"""loop/sandbox.py: the mode, the bwrap command line, and real contained steps."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.loop.layer import MEMORY, memory_budget
from harness.loop.sandbox import (
    FIX,
    Place,
    Sandbox,
    bwrap_argv,
    contain,
    effective_mode,
    probe,
    resolve,
)
from harness.loop.steps import run_step

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(
    BWRAP is None or probe(BWRAP) is not None, reason="bubblewrap does not work here"
)


@pytest.mark.parametrize(
    ("configured", "runner", "expected"),
    [
        (None, None, "auto"),
        (None, "", "auto"),
        (None, "off", "off"),
        (None, "required", "required"),
        ("required", "off", "required"),  # the owners' choice wins over the runner's
        ("off", "required", "off"),
        ("auto", "off", "auto"),
    ],
)
def test_effective_mode(configured: str | None, runner: str | None, expected: str) -> None:
    env = {} if runner is None else {"HARNESS_SANDBOX": runner}
    assert effective_mode(configured, env) == expected  # type: ignore[arg-type]


def test_an_unknown_runner_mode_names_the_variable() -> None:
    with pytest.raises(InvalidInput) as caught:
        effective_mode(None, {"HARNESS_SANDBOX": "yes"})
    assert str(caught.value) == (
        "environment: HARNESS_SANDBOX: 'yes' is not a sandbox mode (expected auto, required or off)"
    )


def test_required_without_bwrap_on_path_refuses_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TrustFailure) as caught:
        resolve("required", {"PATH": str(tmp_path)})
    assert str(caught.value) == (
        f".harness/config.yaml: sandbox: required, but bwrap is not installed (not on PATH); {FIX}"
    )


def test_auto_without_bwrap_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    assert resolve("auto", {"PATH": str(tmp_path)}) == Sandbox(
        "auto", "unavailable", reason="bwrap is not installed (not on PATH)"
    )


def test_off_never_looks_for_bwrap() -> None:
    assert resolve("off", {"PATH": ""}) == Sandbox(
        "off", "off", reason="sandbox: off in the configuration"
    )


def _place(tmp_path: Path, env: dict[str, str] | None = None, binds: tuple[str, ...] = ()) -> Place:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    wt = root / ".harness" / "worktrees" / "g1"
    wt.mkdir(parents=True)
    (wt / "file.txt").write_text("tracked\n")
    base = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    return Place("g1", wt, root, root / ".git", wt.parent, base | (env or {}), binds)


def test_the_command_line_hides_before_it_binds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = tmp_path / "secret-file"
    secret.write_text("s3cret\n")
    place = _place(tmp_path, {"HARNESS_SECRET_FILE": str(secret)})
    (place.common_dir / "harness").mkdir()
    place.home().mkdir(parents=True)
    argv = bwrap_argv("/usr/bin/bwrap", place, ["make"], work=place.worktree, scratch=None)
    root, wt = str(place.repo_root), str(place.worktree)
    assert argv[:14] == [
        "/usr/bin/bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--ro-bind",
    ]  # fmt: skip
    pairs = list(itertools.pairwise(argv))
    worktrees = str(place.worktrees)
    for hidden in (f"{root}/.git/harness", worktrees, str(home / ".ssh")):
        assert ("--tmpfs", hidden) in pairs
    assert pairs[pairs.index(("/dev/null", str(secret))) - 1] == ("--ro-bind", "/dev/null")
    # The writable binds come last, over the hidden folders; then the command.
    assert pairs.index(("--tmpfs", worktrees)) < pairs.index(("--bind", wt))
    home_dir = str(place.home())
    assert argv[-10:] == [
        "--bind", home_dir, home_dir,
        "--bind", wt, wt,
        "--chdir", wt,
        "--", "make",
    ]  # fmt: skip


@needs_bwrap
def test_a_read_only_step_writes_only_its_copy_and_keeps_what_it_was_asked_for(
    tmp_path: Path,
) -> None:
    place = _place(tmp_path)
    sandbox = resolve("required", os.environ)
    script = (
        "from pathlib import Path; Path('file.txt').write_text('changed'); "
        "Path('__pycache__').mkdir(); Path('reports').mkdir(); "
        "Path('reports/junit.xml').write_text('<testsuite/>')"
    )
    with contain(
        sandbox,
        place,
        [sys.executable, "-c", script],
        {},
        writable=False,
        keep=["reports/junit.xml"],
    ) as box:
        layer = box.layer
        result = run_step(box.argv, place.worktree, box.env, b"", 30)
    assert result.exit_code == 0, result.output_tail
    assert (place.worktree / "file.txt").read_text() == "tracked\n"
    assert not (place.worktree / "__pycache__").exists()
    assert (place.worktree / "reports" / "junit.xml").read_text() == "<testsuite/>"
    assert layer is not None and not layer.exists()


@needs_bwrap
@pytest.mark.skipif(memory_budget(MEMORY) is None, reason=f"{MEMORY} has no room here")
def test_a_read_only_step_works_in_memory_where_there_is_room(tmp_path: Path) -> None:
    """The layer is copied into /dev/shm (performance.md: on disk the copy can cost 40-80
    ms a step), and what the step sees there is its worktree."""
    place = _place(tmp_path)
    argv = ["sh", "-c", 'stat -f -c %T . && cat file.txt && echo > "$0"', "new.txt"]
    with contain(resolve("required", os.environ), place, argv, {}, writable=False) as box:
        layer = box.layer
        result = run_step(box.argv, place.worktree, box.env, b"", 30)
    assert result.exit_code == 0, result.output_tail
    assert result.output_tail.splitlines() == ["tmpfs", "tracked"]
    assert layer is not None and layer.parent.parent == MEMORY and not layer.exists()
    assert not (place.worktree / "new.txt").exists()


@needs_bwrap
def test_a_build_writes_its_worktree_and_home(tmp_path: Path) -> None:
    place = _place(tmp_path)
    sandbox = resolve("required", os.environ)
    script = (
        "import os; from pathlib import Path; Path('file.txt').write_text('built\\n'); "
        "Path(os.environ['HOME'], 'session').write_text('kept\\n')"
    )
    with contain(sandbox, place, [sys.executable, "-c", script], {}, writable=True) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 30)
    assert result.exit_code == 0, result.output_tail
    assert (place.worktree / "file.txt").read_text() == "built\n"
    assert (place.home() / "session").read_text() == "kept\n"
    assert box.env["HOME"] == str(place.home())


@needs_bwrap
def test_a_timed_out_step_leaves_no_setsid_child(tmp_path: Path) -> None:
    place = _place(tmp_path)
    sandbox = resolve("required", os.environ)
    marker = f"sandbox-timeout-{os.getpid()}-{time.monotonic_ns()}"
    script = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'], "
        "start_new_session=True); time.sleep(60)"
    )
    with contain(sandbox, place, [sys.executable, "-c", script], {}, writable=True) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 1.0)
    assert result.timed_out
    time.sleep(0.2)
    alive = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                alive.append(int(proc.name))
        except OSError:
            continue
    for pid in alive:
        os.kill(pid, 9)
    assert alive == []


@needs_bwrap
def test_a_bind_shows_the_runners_folder_in_the_goals_home(tmp_path: Path) -> None:
    place = _place(tmp_path, binds=("~/.agent", "~/.not-here"))
    (tmp_path / "home" / ".agent").mkdir(parents=True)
    (tmp_path / "home" / ".agent" / "token").write_text("logged in\n")
    sandbox = resolve("required", os.environ)
    script = (
        "import os; from pathlib import Path; agent = Path(os.environ['HOME'], '.agent'); "
        "assert (agent / 'token').read_text() == 'logged in\\n'; "
        "(agent / 'session').write_text('kept\\n'); "
        "assert not Path(os.environ['HOME'], '.not-here').exists()"
    )
    with contain(sandbox, place, [sys.executable, "-c", script], {}, writable=False) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 30)
    assert result.exit_code == 0, result.output_tail
    assert (tmp_path / "home" / ".agent" / "session").read_text() == "kept\n"


@pytest.mark.parametrize(
    ("bind", "shown"),
    [
        ("~/.ssh", "home/.ssh"),
        ("~/.ssh/id_ed25519", "home/.ssh"),
        ("~/.config", "home/.config/goal-harness"),
        ("/", "repo/.git/harness"),
        ("{root}/src", "repo"),
        ("{root}/.git/hooks", "repo"),
    ],
)
def test_a_bind_that_would_show_a_hidden_path_is_refused(
    tmp_path: Path, bind: str, shown: str
) -> None:
    place = _place(tmp_path, binds=(bind.format(root=tmp_path / "repo"),))
    with pytest.raises(InvalidInput) as caught:
        place.bind_pairs()
    message = str(caught.value)
    assert message.startswith(".harness/config.yaml: sandbox_binds[0]: ")
    assert f"would let a step see or write {tmp_path / shown}" in message
    assert message.endswith(
        "(expected a path outside the repository, ~/.ssh, ~/.gnupg and the secret's folder)"
    )


@needs_bwrap
def test_a_bound_agent_folder_is_where_the_harness_reads_its_records(tmp_path: Path) -> None:
    place = _place(tmp_path, binds=("~/.claude", "~/.codex", "~/.cache"))
    sandbox = resolve("required", os.environ)
    with contain(sandbox, place, ["true"], {"CODEX_HOME": "/elsewhere"}, writable=True) as box:
        assert box.env["HOME"] == str(place.home())
        assert box.records_env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home" / ".claude")
        assert box.records_env["CODEX_HOME"] == "/elsewhere"  # named by the runner: kept
        assert "CLAUDE_CONFIG_DIR" not in box.env
