"""loop/contain/sandbox.py: the mode, the bwrap command line, and real contained steps."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.loop.contain import layer as layers
from harness.loop.contain import sandbox as sandbox_module
from harness.loop.contain.layer import MEMORY, memory_budget, overlay_works
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import (
    FIX,
    Sandbox,
    bwrap_argv,
    contain,
    effective_mode,
    resolve,
    vanished_cover,
)
from harness.loop.contain.sockets import NULLED
from harness.loop.steps import StepResult, run_step
from harness.model.config import Bind, parse_config
from tests.tools import missing_command, need_tool, needs_bwrap, needs_command


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


def config_binds(entries: tuple[str, ...]) -> tuple[Bind, ...]:
    """`sandbox_binds` as `.harness/config.yaml` would give them (JSON is YAML)."""
    document = json.dumps({"sandbox_binds": list(entries)}).encode()
    return parse_config(document, ".harness/config.yaml").sandbox_binds


def place_in(base: Path, env: dict[str, str] | None = None, binds: tuple[str, ...] = ()) -> Place:
    """Goal g1's place in a new repository `base/repo`, the runner's HOME `base/home`."""
    root = base / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    wt = root / ".harness" / "worktrees" / "g1"
    wt.mkdir(parents=True)
    (wt / "file.txt").write_text("tracked\n")
    runner = {"HOME": str(base / "home"), "XDG_STATE_HOME": str(base / "state")}
    return Place(
        "g1", wt, root, root / ".git", wt.parent, runner | (env or {}), config_binds(binds)
    )


def run_contained(place: Place, argv: list[str], network: bool = True) -> StepResult:
    """`argv` as a build of `place` runs it, under bwrap."""
    sandbox = resolve("required", os.environ)
    with contain(sandbox, place, argv, {}, writable=True, network=network) as box:
        return run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)


def test_the_command_line_hides_before_it_binds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = tmp_path / "secret-file"
    secret.write_text("s3cret\n")
    place = place_in(tmp_path, {"HARNESS_SECRET_FILE": str(secret)})
    (place.common_dir / "harness").mkdir()
    place.home().mkdir(parents=True)
    argv = bwrap_argv("/usr/bin/bwrap", place, ["make"], work=place.worktree, scratch=None)
    root, wt = str(place.repo_root), str(place.worktree)
    identity = sandbox_module._identity("/usr/bin/bwrap")[0]
    assert identity[-2:] == ("--cap-drop", "ALL")
    assert argv[: 14 + len(identity)] == [
        "/usr/bin/bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        *identity,
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


def _shown_again(argv: list[str]) -> list[str]:
    """What the command line shows again read-only after /tmp's tmpfs (the `--ro-bind`s of
    a path onto itself before the first hidden folder). The host's sockets come first, each
    covered with /dev/null: there are some whenever a service (or a test beside this one)
    listens under /run."""
    index, shown = argv.index("--die-with-parent") + 1, []
    while argv[index : index + 2] == NULLED:
        index += 3
    while argv[index] == "--ro-bind" and argv[index + 1] == argv[index + 2]:
        shown.append(argv[index + 1])
        index += 3
    return shown


def test_a_checkout_under_tmp_is_shown_again_with_its_git_in_one_mount(tmp_path: Path) -> None:
    place = place_in(tmp_path)
    place.home().mkdir(parents=True)
    argv = bwrap_argv("/usr/bin/bwrap", place, ["make"], work=place.worktree, scratch=None)
    assert str(place.repo_root).startswith("/tmp/")
    prefixes = [str(p) for p in sandbox_module._python_prefixes_in_tmp()]
    assert _shown_again(argv) in (
        [str(place.repo_root.resolve()), *prefixes],
        [*prefixes, str(place.repo_root.resolve())],
    )


@needs_bwrap
def test_a_checkout_outside_tmp_is_not_bound_again_and_its_build_runs(tmp_path: Path) -> None:
    """Outside /tmp the read-only root already shows the checkout: no mount of its own."""
    base = Path(tempfile.mkdtemp(prefix="harness-test-", dir="/var/tmp"))
    try:
        place = place_in(base)
        argv = bwrap_argv("/usr/bin/bwrap", place, ["make"], work=place.worktree, scratch=None)
        assert str(place.repo_root.resolve()) not in _shown_again(argv)
        (place.repo_root / "main.txt").write_text("from main\n")
        result = run_contained(place, ["sh", "-c", "cat ../../../main.txt > seen.txt"])
        assert result.exit_code == 0, result.output_tail
        assert (place.worktree / "seen.txt").read_text() == "from main\n"
        result = run_contained(place, ["sh", "-c", "echo x > ../../../main.txt"])
        assert result.exit_code != 0  # the checkout stays read-only
        assert (place.repo_root / "main.txt").read_text() == "from main\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_bwrap
def test_a_read_only_step_writes_only_its_copy_and_keeps_what_it_was_asked_for(
    tmp_path: Path,
) -> None:
    place = place_in(tmp_path)
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
        result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert result.exit_code == 0, result.output_tail
    assert (place.worktree / "file.txt").read_text() == "tracked\n"
    assert not (place.worktree / "__pycache__").exists()
    assert (place.worktree / "reports" / "junit.xml").read_text() == "<testsuite/>"
    assert layer is not None and not layer.exists()


@needs_bwrap
@pytest.mark.skipif(memory_budget(MEMORY) is None, reason=f"{MEMORY} has no room here")
def test_a_read_only_step_works_in_memory_where_there_is_room(tmp_path: Path) -> None:
    """The layer goes in /dev/shm (performance.md: on disk a copy can cost 40-80 ms a
    step), an overlay where the kernel allows one, and what the step sees there is its
    worktree."""
    place = place_in(tmp_path)
    argv = ["sh", "-c", 'stat -f -c %T . && cat file.txt && echo > "$0"', "new.txt"]
    with contain(resolve("required", os.environ), place, argv, {}, writable=False) as box:
        layer = box.layer
        result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert result.exit_code == 0, result.output_tail
    kind = "overlayfs" if overlay_works(MEMORY) else "tmpfs"
    assert result.output_tail.splitlines() == [kind, "tracked"]
    assert layer is not None and layer.parent == MEMORY and not layer.exists()
    assert not (place.worktree / "new.txt").exists()


@needs_bwrap
@pytest.mark.parametrize("overlay", [True, False], ids=["overlay", "copy"])
def test_a_read_only_step_deletes_renames_and_chmods_only_its_layer(
    tmp_path: Path, overlay: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a judge may do to its layer (remove a tracked file and a folder, rename a
    folder of the worktree, take permissions away) never reaches the worktree, whichever
    kind of layer it has (the overlay's deletions are whiteouts in its upper folder)."""
    if not overlay:
        monkeypatch.setattr(layers, "overlay_works", lambda parent, then: None)
    elif overlay_works(MEMORY) is None:
        need_tool("an overlay in a user namespace (Linux 5.11, util-linux 2.38)")
    place = place_in(tmp_path)
    (place.worktree / "src" / "pkg").mkdir(parents=True)
    (place.worktree / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    script = (
        "rm file.txt && rm -r src/pkg && mkdir -p src/pkg && mv src renamed && "
        "chmod 0 renamed && echo new > new.txt && ls -A"
    )
    with contain(
        resolve("required", os.environ), place, ["sh", "-c", script], {}, writable=False
    ) as box:
        assert box.layer is not None
        shown = box.layer
        assert (box.prepare is not None) == overlay
        result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert result.exit_code == 0, result.output_tail
    assert result.output_tail.split() == ["new.txt", "renamed"]
    assert (place.worktree / "file.txt").read_text() == "tracked\n"
    assert (place.worktree / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert sorted(p.name for p in place.worktree.iterdir()) == ["file.txt", "src"]
    assert not shown.exists()


@needs_bwrap
def test_a_build_writes_its_worktree_and_home(tmp_path: Path) -> None:
    place = place_in(tmp_path)
    sandbox = resolve("required", os.environ)
    script = (
        "import os; from pathlib import Path; Path('file.txt').write_text('built\\n'); "
        "Path(os.environ['HOME'], 'session').write_text('kept\\n')"
    )
    with contain(sandbox, place, [sys.executable, "-c", script], {}, writable=True) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert result.exit_code == 0, result.output_tail
    assert (place.worktree / "file.txt").read_text() == "built\n"
    assert (place.home() / "session").read_text() == "kept\n"
    assert box.env["HOME"] == str(place.home())


@needs_bwrap
def test_a_timed_out_step_leaves_no_setsid_child(tmp_path: Path) -> None:
    place = place_in(tmp_path)
    sandbox = resolve("required", os.environ)
    marker = f"sandbox-timeout-{os.getpid()}-{time.monotonic_ns()}"
    script = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'], "
        "start_new_session=True); time.sleep(60)"
    )
    with contain(sandbox, place, [sys.executable, "-c", script], {}, writable=True) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 1.0, prepare=box.prepare)
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
    place = place_in(tmp_path, binds=("rw:~/.agent", "~/.not-here"))
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
        result = run_step(box.argv, place.worktree, box.env, b"", 30, prepare=box.prepare)
    assert result.exit_code == 0, result.output_tail
    assert (tmp_path / "home" / ".agent" / "session").read_text() == "kept\n"


@pytest.mark.parametrize(
    ("bind", "shown"),
    [
        ("~/.ssh", "home/.ssh"),
        ("~/.ssh/id_ed25519", "home/.ssh"),
        ("~/.config", "home/.config/goal-harness"),
        ("{root}/.git", "repo/.git/harness"),
        ("{root}/src", "repo"),
        ("{root}/.git/hooks", "repo"),
        ("rw:~/.gnupg", "home/.gnupg"),
    ],
)
def test_a_bind_that_would_show_a_hidden_path_is_refused(
    tmp_path: Path, bind: str, shown: str
) -> None:
    place = place_in(tmp_path, binds=(bind.format(root=tmp_path / "repo"),))
    with pytest.raises(InvalidInput) as caught:
        place.bound()
    message = str(caught.value)
    assert message.startswith(".harness/config.yaml: sandbox_binds[0]: ")
    assert f"would let a step see or write {tmp_path / shown}" in message
    assert message.endswith(
        "(expected a path outside the repository, ~/.ssh, ~/.gnupg and the secret's folder)"
    )


@needs_bwrap
def test_a_bind_is_read_only_unless_marked_rw(tmp_path: Path) -> None:
    """The attack a writable bind allows: a build writes a hook into the runner's own agent
    settings, obeyed the next time the runner's user runs the agent, outside any sandbox."""
    place = place_in(tmp_path, binds=("~/.agent", "rw:~/.session", "/srv/not-here"))
    for name in (".agent", ".session"):
        (tmp_path / "home" / name).mkdir(parents=True)
        (tmp_path / "home" / name / "settings.json").write_text("{}\n")
    script = (
        "import errno, json, os, sys; seen = {}\n"
        "for name in ('.agent', '.session'):\n"
        "    try:\n"
        "        with open(os.path.join(os.environ['HOME'], name, 'settings.json'), 'a') as f:\n"
        "            f.write('hook\\n')\n"
        "        seen[name] = 'written'\n"
        "    except OSError as exc:\n"
        "        seen[name] = errno.errorcode[exc.errno]\n"
        "print(json.dumps(seen))\n"
    )
    result = run_contained(place, [sys.executable, "-c", script])
    assert result.exit_code == 0, result.output_tail
    assert json.loads(result.stdout_tail) == {".agent": "EROFS", ".session": "written"}
    assert (tmp_path / "home" / ".agent" / "settings.json").read_text() == "{}\n"
    assert (tmp_path / "home" / ".session" / "settings.json").read_text() == "{}\nhook\n"


@needs_bwrap
def test_a_bound_agent_folder_is_where_the_harness_reads_its_records(tmp_path: Path) -> None:
    place = place_in(tmp_path, binds=("rw:~/.claude", "rw:~/.codex", "~/.cache"))
    sandbox = resolve("required", os.environ)
    with contain(sandbox, place, ["true"], {"CODEX_HOME": "/elsewhere"}, writable=True) as box:
        assert box.env["HOME"] == str(place.home())
        assert box.records_env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home" / ".claude")
        assert box.records_env["CODEX_HOME"] == "/elsewhere"  # named by the runner: kept
        assert "CLAUDE_CONFIG_DIR" not in box.env


@needs_bwrap
def test_through_a_read_only_bind_the_agent_wrote_no_records(tmp_path: Path) -> None:
    place = place_in(tmp_path, binds=("~/.claude",))
    sandbox = resolve("required", os.environ)
    with contain(sandbox, place, ["true"], {}, writable=True) as box:
        assert "CLAUDE_CONFIG_DIR" not in box.records_env


# ---- every hidden path, tried by a real contained build ---------------------------------

# What the build reads at each hidden path (a file, or the agent socket through ssh-add).
SEES = r"""
import json, os, subprocess, sys
seen = {}
for name, path in json.loads(sys.argv[1]).items():
    if name == "the folder of SSH_AUTH_SOCK":
        env = dict(os.environ, SSH_AUTH_SOCK=path)
        done = subprocess.run(["ssh-add", "-l"], env=env, capture_output=True, text=True)
        seen[name] = f"ssh-add exit {done.returncode}: {(done.stdout + done.stderr).strip()}"
        continue
    try:
        seen[name] = open(path).read()
    except OSError as exc:
        seen[name] = type(exc).__name__
print(json.dumps(seen))
"""


@dataclass(frozen=True)
class HiddenWorld:
    """A real thing at every path `Place.hidden()` names, outside /tmp: a step's /tmp is its
    own, which would hide anything under the runner's /tmp by itself."""

    place: Place
    probes: dict[str, str]  # what Place.hidden_named() calls each path: what the build opens
    key: str  # the agent's key, as `ssh-add -l` lists it

    def seen(self, sandbox: Sandbox) -> dict[str, str]:
        argv = [sys.executable, "-c", SEES, json.dumps(self.probes)]
        with contain(sandbox, self.place, argv, dict(os.environ), writable=True) as box:
            result = run_step(box.argv, self.place.worktree, box.env, b"", 30, prepare=box.prepare)
        assert result.exit_code == 0, result.output_tail
        return dict(json.loads(result.stdout_tail))


def _write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@contextlib.contextmanager
def _agent(folder: Path) -> Iterator[str]:
    """A real ssh-agent listening in `folder`, holding one key; its listing of the key."""
    for tool, package in (("ssh-agent", "openssh-client"), ("ssh-add", "openssh-client")):
        missing = missing_command(tool, package)
        if missing is not None:
            need_tool(missing)
    folder.mkdir(mode=0o700)
    socket = folder / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not socket.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        key = folder.parent / "agent-key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        env = dict(os.environ, SSH_AUTH_SOCK=str(socket))
        subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)
        listed = subprocess.run(["ssh-add", "-l"], env=env, capture_output=True, text=True)
        yield listed.stdout.strip()
    finally:
        agent.kill()
        agent.wait()


@contextlib.contextmanager
def _in_runtime_folder() -> Iterator[Path]:
    """A file in /run/user/<uid>, the folder made (as root) and removed when it was not there."""
    folder = Path(f"/run/user/{os.getuid()}")
    made = not folder.exists()
    if made and not os.access(folder.parent, os.W_OK):
        need_tool(f"needs {folder} or root to make it")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    thing = folder / f"harness-test-{os.getpid()}-{time.monotonic_ns()}"
    thing.write_text("the user's runtime folder\n")
    try:
        yield thing
    finally:
        thing.unlink()
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()  # left when someone else put something there meanwhile


@pytest.fixture(scope="module")
def hidden_world() -> Iterator[HiddenWorld]:
    base = Path(tempfile.mkdtemp(prefix="harness-hidden-", dir="/var/tmp"))
    try:
        with _agent(base / "agent") as key, _in_runtime_folder() as runtime:
            env = {
                "XDG_CONFIG_HOME": str(base / "config"),
                "HARNESS_SECRET_FILE": _write(base / "secret-file", "the secret file\n"),
                "HARNESS_RUNNER_KEY_FILE": _write(base / "keys" / "runner", "runner key\n"),
                "SSH_AUTH_SOCK": str(base / "agent" / "agent.sock"),
            }
            place = place_in(base, env)
            home, git_dir = base / "home", place.common_dir
            probes = {
                ".git/harness": _write(git_dir / "harness" / "locks" / "g1.child", "record\n"),
                "the goals' worktrees": _write(place.worktrees / "g2" / "x", "another goal\n"),
                "the goals' homes": _write(place.homes() / "g2" / "session", "g2's session\n"),
                "~/.ssh": _write(home / ".ssh" / "id_ed25519", "the owner's key\n"),
                "~/.gnupg": _write(home / ".gnupg" / "private-keys-v1.d" / "k", "gpg key\n"),
                "the secret's folder": _write(base / "config" / "goal-harness" / "secret", "s\n"),
                "HARNESS_SECRET_FILE": env["HARNESS_SECRET_FILE"],
                "HARNESS_RUNNER_KEY_FILE": env["HARNESS_RUNNER_KEY_FILE"],
                "the folder of SSH_AUTH_SOCK": env["SSH_AUTH_SOCK"],
                "the user's runtime folder": str(runtime),
            }
            yield HiddenWorld(place, probes, key)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_hidden_path_is_tried(hidden_world: HiddenWorld) -> None:
    named = {what for _, what in hidden_world.place.hidden_named()}
    assert named == set(hidden_world.probes)


def test_uncontained_the_build_would_see_every_hidden_thing(hidden_world: HiddenWorld) -> None:
    seen = hidden_world.seen(Sandbox("off", "off"))
    assert seen["the folder of SSH_AUTH_SOCK"] == f"ssh-add exit 0: {hidden_world.key}"
    files = {name: path for name, path in hidden_world.probes.items() if "SSH_AUTH" not in name}
    assert {name: seen[name] for name in files} == {
        name: Path(path).read_text() for name, path in files.items()
    }


@needs_bwrap
@pytest.mark.parametrize(
    "what",
    [
        ".git/harness",
        "the goals' worktrees",
        "the goals' homes",
        "~/.ssh",
        "~/.gnupg",
        "the secret's folder",
        "HARNESS_SECRET_FILE",
        "HARNESS_RUNNER_KEY_FILE",
        "the user's runtime folder",
    ],
)
def test_a_contained_build_cannot_read_a_hidden_path(hidden_world: HiddenWorld, what: str) -> None:
    seen = hidden_world.seen(resolve("required", os.environ))[what]
    # A hidden folder is an empty tmpfs; a hidden file is /dev/null, a device on a mount
    # that allows none (bwrap binds nodev): opening it is refused.
    hidden_file = what in ("HARNESS_SECRET_FILE", "HARNESS_RUNNER_KEY_FILE")
    assert seen == ("PermissionError" if hidden_file else "FileNotFoundError")


@needs_bwrap
def test_a_contained_build_cannot_use_the_ssh_agent(hidden_world: HiddenWorld) -> None:
    """Not even with the socket's path named: the folder it is in is empty inside."""
    seen = hidden_world.seen(resolve("required", os.environ))["the folder of SSH_AUTH_SOCK"]
    assert seen.startswith("ssh-add exit 2: Error connecting to agent: No such file or directory")


ROOT_IN_A_NAMESPACE = r"""
import os, sys
from pathlib import Path
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import _identity, contain, resolve
from harness.loop.steps import run_step
root = Path(sys.argv[1])
wt = root / ".harness" / "worktrees" / "g1"
place = Place("g1", wt, root, root / ".git", wt.parent, {"HOME": sys.argv[2]})
step = "grep -E '^CapEff' /proc/self/status; mount -o remount,rw / && echo REMOUNTED"
print(" ".join(_identity(resolve("required", os.environ).bwrap or "")[0]))
for writable in (True, False):
    with contain(resolve("required", os.environ), place, ["sh", "-c", step], {}, writable=writable) as box:
        print(run_step(box.argv, wt, box.env, b"", 30, prepare=box.prepare).output_tail, end="")
"""


@needs_bwrap
@needs_command("unshare", "util-linux")
def test_a_runner_that_is_root_in_a_user_namespace_gives_its_steps_no_capability(
    tmp_path: Path,
) -> None:
    """Root in a user namespace whose /proc bwrap cannot mount again in a nested one (a
    container's, made here by bwrap as systemd's user manager makes one): the step is root
    of the runner's namespace, with every capability dropped, a build and a judge."""
    place = place_in(tmp_path)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    checkout = os.fspath(Path(__file__).parents[2])
    argv = [bwrap, "--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--bind", os.fspath(tmp_path), os.fspath(tmp_path),
            *(arg for path in _under_tmp(sys.prefix, checkout) for arg in ("--ro-bind", path, path)),
            "--", sys.executable, "-c", ROOT_IN_A_NAMESPACE,
            os.fspath(place.repo_root), os.fspath(tmp_path / "home")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": checkout}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    identity, *lines = done.stdout.splitlines()
    assert identity == "--cap-drop ALL"  # the fallback this test is about
    assert "REMOUNTED" not in lines
    # No effective capability (the bounding set stays; no_new_privs and bwrap's securebits
    # keep an exec from gaining any, as the grep and mount here show).
    effective = [line.split()[1] for line in lines if line.startswith("CapEff")]
    assert effective == ["0000000000000000"] * 2, done.stdout


def _under_tmp(*paths: str) -> list[str]:
    return sorted(
        {os.fspath(Path(p).resolve()) for p in paths if Path(p).resolve().is_relative_to("/tmp")}
    )


@needs_bwrap
@pytest.mark.parametrize("network", [True, False])
def test_a_step_without_network_reaches_no_listening_socket(tmp_path: Path, network: bool) -> None:
    """`network: false` is a network namespace of the step's own: a server on the runner's
    127.0.0.1 is out of reach; with the network it is reached (found by mutmut: only
    subprocess tests held this, and a mutant of `bwrap_argv` is not seen there)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "except OSError as exc:\n"
        "    sys.exit(f'refused: {exc}')\n"
    )
    try:
        result = run_contained(place_in(tmp_path), [sys.executable, "-c", probe], network)
    finally:
        server.close()
    assert (result.exit_code == 0) is network, result.output_tail
    if not network:  # the probe ran and was refused (not bwrap refusing its own options)
        assert "refused: " in result.output_tail, result.output_tail


@needs_bwrap
def test_a_socket_gone_between_the_walk_and_bwrap_is_told_apart(tmp_path: Path) -> None:
    """A socket under /run found by the walk and removed before bwrap mounts /dev/null over
    it (a service restarting; the suite's own attack tests do it beside every other test):
    bwrap stops before the command, and `vanished_cover` says so, so the step is started
    again (`StepCommands.run_contained`) instead of failing on the host's churn."""
    import socket

    if not os.access("/run", os.W_OK):
        need_tool("needs a writable /run for a test socket (run the suite as root)")
    folder = Path(f"/run/harness-vanish-{os.getpid()}")
    folder.mkdir()
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        place = place_in(tmp_path)
        sandbox = resolve("required", os.environ)
        with contain(sandbox, place, ["true"], {}, writable=True) as box:
            assert str(path) in box.argv
            assert not vanished_cover("", box.argv)
            path.unlink()
            folder.rmdir()
            cut = run_step(box.argv, place.worktree, box.env, b"", 30, bwrap=True)
            assert cut.exit_code == 1, cut.output_tail
            assert cut.output_tail.startswith(f"bwrap: Can't mkdir parents for {path}: ")
            assert vanished_cover(cut.output_tail, box.argv)
            # Another's path, or one still there, is a failure of its own.
            assert not vanished_cover(cut.output_tail, box.argv[: box.argv.index(str(path))])
            folder.mkdir()
            path.touch()
            assert not vanished_cover(cut.output_tail, box.argv)
        assert run_contained(place_in(tmp_path / "again"), ["true"]).exit_code == 0
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
def test_a_hidden_folder_gone_before_bwrap_is_told_apart(tmp_path: Path) -> None:
    """A folder the harness hides with a tmpfs (here SSH_AUTH_SOCK's; /run/user/<uid> at a
    logout, and in this suite the folder the hidden-paths tests make and remove) removed
    between `contain()` and bwrap's mounts: bwrap cannot make its mount point on the
    read-only root and stops before the command, and the step is started again."""
    agent = Path(tempfile.mkdtemp(prefix="harness-agent-", dir="/var/tmp"))
    try:
        place = place_in(tmp_path, {"SSH_AUTH_SOCK": str(agent / "agent.sock")})
        sandbox = resolve("required", os.environ)
        with contain(sandbox, place, ["true"], {}, writable=True) as box:
            assert box.argv[box.argv.index(str(agent)) - 1] == "--tmpfs"
            agent.rmdir()
            cut = run_step(box.argv, place.worktree, box.env, b"", 30, bwrap=True)
            assert cut.exit_code == 1, cut.output_tail
            assert cut.output_tail.startswith(f"bwrap: Can't mkdir {agent}: ")
            assert vanished_cover(cut.output_tail, box.argv)
            agent.mkdir()  # there again: a failure of its own
            assert not vanished_cover(cut.output_tail, box.argv)
    finally:
        shutil.rmtree(agent, ignore_errors=True)
