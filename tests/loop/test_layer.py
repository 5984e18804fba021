"""The throw-away layer (harness/loop/contain/layer.py) on real file systems: the copy is the
worktree as a step must see it, it goes in memory only when there is room, and no layer is
left behind, by a step that took its write permission away or by a killed run."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.loop.contain.layer import (
    MEMORY,
    PREFIX,
    STALE_AFTER_S,
    TooBig,
    copy_tree,
    make_layer,
    memory_budget,
    remove_tree,
    sweep,
    try_layer,
)
from tests.tools import need_tool

CHECKOUT = Path(__file__).parents[2]


def _tree(root: Path) -> Path:
    """A worktree with what a copy must keep: modes, times, links (one dangling, one out of
    the tree), empty files and folders, a read-only folder, a deep path, a large file."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (root / "secret.txt").write_text("only me\n")
    (root / "secret.txt").chmod(0o600)
    (root / "empty-folder").mkdir()
    (root / "link-in").symlink_to("src/pkg/mod.py")
    (root / "link-dangling").symlink_to("no/such/file")
    (root / "link-out").symlink_to("/etc/hostname")
    deep = root
    for _ in range(1200):  # deeper than Python's recursion limit (and mkdir's parents=True)
        deep = deep / "d"
        deep.mkdir()
    (deep / "leaf.txt").write_text("leaf\n")
    frozen = root / "frozen"
    frozen.mkdir()
    (frozen / "kept.txt").write_text("kept\n")
    os.utime(root / "src" / "pkg" / "mod.py", ns=(1_000_000_123, 2_000_000_456))
    frozen.chmod(0o555)
    return root


def _manifest(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path under root with its kind, mode, mtime and bytes or link target (walked
    without recursion: the tree is deeper than Python recurses)."""
    found: dict[str, tuple[object, ...]] = {}
    stack = [root]
    while stack:
        for path in stack.pop().iterdir():
            info = path.lstat()
            rel = os.fspath(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", stat.S_IMODE(info.st_mode), info.st_mtime_ns)
                stack.append(path)
            else:
                kind = "file" if stat.S_ISREG(info.st_mode) else "other"
                body = path.read_bytes() if kind == "file" else b""
                found[rel] = (kind, stat.S_IMODE(info.st_mode), info.st_mtime_ns, body)
    return found


@pytest.fixture(autouse=True)
def _remove_deep_trees(tmp_path: Path) -> Iterator[None]:
    """pytest's own clean-up recurses, and these trees are deeper than it can."""
    yield
    remove_tree(tmp_path)
    tmp_path.mkdir()


def test_the_copy_is_the_tree_with_modes_times_and_links(tmp_path: Path) -> None:
    source = _tree(tmp_path / "wt")
    os.mkfifo(source / "pipe")
    copy_tree(source, tmp_path / "copy", None)
    want = _manifest(source)
    assert want.pop("pipe")[0] == "other"  # a pipe is left out: a step cannot need one
    assert _manifest(tmp_path / "copy") == want
    root_mode = stat.S_IMODE((tmp_path / "copy").stat().st_mode)
    assert root_mode == stat.S_IMODE(source.stat().st_mode)


def test_a_copy_past_its_budget_leaves_nothing(tmp_path: Path) -> None:
    source = _tree(tmp_path / "wt")
    parent = tmp_path / "memory"
    parent.mkdir()
    with pytest.raises(TooBig):
        copy_tree(source, parent / "x", 1024 * 1024)  # big.bin alone is 3 MiB
    remove_tree(parent / "x")
    assert try_layer(parent, source, 1024 * 1024) is None
    assert list(parent.iterdir()) == []
    layer = try_layer(parent, source, 64 * 1024 * 1024)
    assert layer is not None and _manifest(layer.work) == _manifest(source)
    layer.remove()
    assert list(parent.iterdir()) == []


def test_a_full_memory_falls_back_and_leaves_nothing(tmp_path: Path) -> None:
    """A real 1 MiB tmpfs (in a user and mount namespace of its own): the copy runs out of
    room (ENOSPC) within its budget, and the layer goes elsewhere."""
    if shutil.which("unshare") is None:
        need_tool("needs unshare (apt-get install util-linux)")
    source = _tree(tmp_path / "wt")
    script = (
        "import sys; from pathlib import Path; from harness.loop.contain.layer import try_layer\n"
        "mem = Path(sys.argv[1]); print(try_layer(mem, Path(sys.argv[2]), 1 << 40))\n"
        "print(sorted(p.name for p in mem.iterdir()))\n"
    )
    mem = tmp_path / "mem"
    mem.mkdir()
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         'mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" -c "$3" "$1" "$4"', "sh",
         os.fspath(mem), sys.executable, script, os.fspath(source)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.fspath(CHECKOUT)},
    )  # fmt: skip
    if done.returncode != 0 and "mount" in done.stderr:
        need_tool(f"cannot mount a tmpfs in a user namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "None\n[]\n"


def test_a_layer_goes_in_memory_when_there_is_room(tmp_path: Path) -> None:
    if memory_budget(MEMORY) is None:
        pytest.skip(f"{MEMORY} has less than 1 GiB free here")
    source = _tree(tmp_path / "wt")
    layer = make_layer(source, overlay=None)
    try:
        assert layer.folder.parent == MEMORY and layer.folder.name.startswith(PREFIX)
        assert _manifest(layer.work) == _manifest(source)
    finally:
        layer.remove()
    assert not layer.folder.exists()


def test_without_memory_the_layer_is_on_disk(tmp_path: Path) -> None:
    assert memory_budget(tmp_path / "no-such-folder") is None
    assert memory_budget(tmp_path, floor=1 << 62) is None  # less free than the floor
    source = _tree(tmp_path / "wt")
    layer = make_layer(source, memory=tmp_path / "no-such-folder", overlay=None)
    try:
        assert layer.folder.parent == Path(tempfile.gettempdir())
    finally:
        layer.remove()


LOCKING_STEP = {
    # The copy: the step's chmods reach the copy's folders directly.
    "copy": (
        "layer = make_layer(wt, overlay=None)\n"
        "os.chmod(layer.work / 'a' / 'b', 0o500); os.chmod(layer.work / 'c', 0)\n"
        "os.chmod(layer.work, 0o500)\n"
    ),
    # The overlay: the same chmods through the mount copy the folders up into `upper`, and
    # the kernel leaves a folder of mode 000 in `scratch`.
    "overlay": (
        "layer = make_layer(wt)\n"
        "assert layer.mount is not None, 'no overlay for nobody here'\n"
        "import subprocess\n"
        "chmods = 'chmod 500 merged/a/b && chmod 0 merged/c && chmod 500 merged'\n"
        "subprocess.run(['/bin/sh', '-c', chmods], cwd=layer.folder, preexec_fn=layer.prepare,"
        " check=True)\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(LOCKING_STEP))
def test_a_layer_whose_folders_a_step_locked_is_still_removed(kind: str) -> None:
    """The step runs as the runner's user and may take write and read permission away from
    folders in its layer; removing the layer must not stop at them. Run as `nobody`, since
    root's removal ignores permissions."""
    if os.geteuid() != 0:
        pytest.skip("needs root (to become nobody)")
    if shutil.which("setpriv") is None:
        need_tool("needs setpriv (apt-get install util-linux)")
    base = Path(tempfile.mkdtemp(prefix="harness-layer-test-"))
    try:
        base.chmod(0o755)
        script = (
            "import os, sys; from pathlib import Path\n"
            "from harness.loop.contain.layer import make_layer, remove_tree\n"
            "wt = Path(sys.argv[1]) / 'wt'; (wt / 'a' / 'b').mkdir(parents=True)\n"
            "(wt / 'a' / 'b' / 'f').write_text('x'); (wt / 'c').mkdir(); (wt / 'c' / 'g').touch()\n"
            f"{LOCKING_STEP[kind]}"
            "layer.remove(); print(layer.folder.exists())\n"
        )
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        os.chown(base, 65534, 65534)
        done = subprocess.run(
            [*nobody, sys.executable, "-c", script, os.fspath(base)],
            capture_output=True, text=True, env={"PYTHONPATH": os.fspath(CHECKOUT), "PATH": os.defpath},
        )  # fmt: skip
        if done.returncode != 0 and "ModuleNotFoundError" in done.stderr:
            pytest.skip(f"nobody cannot import the harness from {CHECKOUT}")
        if "no overlay for nobody here" in done.stderr:
            need_tool("an overlay in a user namespace (Linux 5.11, util-linux 2.38)")
        assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


HOLDER = (
    "import sys; from pathlib import Path; from harness.loop.contain.layer import make_layer\n"
    "layer = make_layer(Path(sys.argv[1]), memory=Path(sys.argv[2]))\n"
    "print(layer.folder, flush=True); sys.stdin.read()\n"
)


def test_a_killed_runs_layer_is_swept_and_a_live_one_kept(tmp_path: Path) -> None:
    source = _tree(tmp_path / "wt")
    parent = Path(tempfile.gettempdir())
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, os.fspath(source), os.fspath(tmp_path / "no-memory")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.fspath(CHECKOUT)},
    )  # fmt: skip
    assert holder.stdout is not None
    held = Path(holder.stdout.readline().strip())
    assert held.parent == parent
    long_ago = time.time() - STALE_AFTER_S - 5
    os.utime(held, (long_ago, long_ago))
    young = Path(tempfile.mkdtemp(prefix=PREFIX))  # unlocked, but too young to judge
    try:
        sweep(parent)
        assert held.exists() and young.exists()  # the live run's layer is kept
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        sweep(parent)
        assert not held.exists()  # the killed run's layer is gone
        assert young.exists()
    finally:
        holder.kill()
        shutil.rmtree(held, ignore_errors=True)
        shutil.rmtree(young, ignore_errors=True)


def test_a_layer_in_memory_sweeps_the_disk_too(tmp_path: Path) -> None:
    """A killed run's layer on disk is removed by the next layer, also when that one goes in
    memory (the usual case), not only by a later layer on disk."""
    left = Path(tempfile.mkdtemp(prefix=PREFIX))  # on disk, unlocked: a killed run's
    long_ago = time.time() - STALE_AFTER_S - 5
    os.utime(left, (long_ago, long_ago))
    memory = tmp_path / "memory"
    memory.mkdir()
    source = tmp_path / "wt"
    source.mkdir()
    (source / "f.txt").write_text("x\n")
    layer = make_layer(source, memory=memory) if memory_budget(memory) else None
    try:
        if layer is None:
            pytest.skip(f"{tmp_path} has less than 1 GiB free")
        assert layer.folder.parent == memory
        assert not left.exists()
    finally:
        if layer is not None:
            layer.remove()
        remove_tree(left)


def test_a_sweep_leaves_other_names_alone(tmp_path: Path) -> None:
    other = tmp_path / "harness-layer-old-version"  # what earlier versions made
    other.mkdir()
    mine = tmp_path / f"{PREFIX}left"
    mine.mkdir()
    long_ago = time.time() - STALE_AFTER_S - 5
    for path in (other, mine):
        os.utime(path, (long_ago, long_ago))
    sweep(tmp_path)
    assert other.exists() and not mine.exists()


def test_where_no_user_namespace_may_be_made_the_layer_is_a_copy(tmp_path: Path) -> None:
    """A runner that may not make a user namespace (a container's seccomp profile, a
    sysctl, Ubuntu's AppArmor rule): the overlay's mount fails in the step's own process
    before exec, the probe says so, and the step gets a copy, as before overlays. Run in a
    bwrap that disables further user namespaces, the same refusal the kernel makes there."""
    if shutil.which("bwrap") is None:
        need_tool("needs bwrap (apt-get install bubblewrap)")
    source = tmp_path / "wt"
    source.mkdir()
    (source / "f.txt").write_text("x\n")
    script = (
        "import sys; from pathlib import Path\n"
        "from harness.loop.contain.layer import MEMORY, make_layer, overlay_works\n"
        "print(overlay_works(MEMORY)); made = make_layer(Path(sys.argv[1]))\n"
        "print(made.mount, made.prepare, (made.work / 'f.txt').read_text(), end='')\n"
        "made.remove()\n"
    )
    jail = ["bwrap", "--dev-bind", "/", "/", "--unshare-user", "--disable-userns", "--"]
    done = subprocess.run(
        [*jail, sys.executable, "-c", script, os.fspath(source)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": os.fspath(CHECKOUT), "PATH": os.defpath},
    )
    assert (done.returncode, done.stdout) == (0, "None\nNone None x\n"), done.stderr
    # Outside that jail, here, the same folder gets an overlay (else the test shows nothing).
    made = make_layer(source)
    try:
        if made.mount is None:
            need_tool("an overlay in a user namespace (Linux 5.11)")
    finally:
        made.remove()


def test_an_overlay_layer_shows_the_worktree_and_keeps_the_writes_apart(tmp_path: Path) -> None:
    source = tmp_path / "wt"
    source.mkdir()
    (source / "f.txt").write_text("x\n")
    made = make_layer(source)
    try:
        if made.mount is None:
            need_tool("an overlay in a user namespace (Linux 5.11, util-linux 2.38)")
        step = "cat merged/f.txt && echo y > merged/f.txt && echo z > merged/g.txt"
        done = subprocess.run(
            ["/bin/sh", "-c", step],
            cwd=made.folder,
            preexec_fn=made.prepare,
            capture_output=True,
            text=True,
        )
        assert (done.returncode, done.stdout) == (0, "x\n"), done.stderr
        assert (source / "f.txt").read_text() == "x\n" and not (source / "g.txt").exists()
        assert (made.written / "f.txt").read_text() == "y\n"
        assert (made.written / "g.txt").read_text() == "z\n"
        assert list(made.work.iterdir()) == []  # mounted only inside the step's namespace
    finally:
        made.remove()
    assert not made.folder.exists()


def test_an_overlay_that_cannot_be_mounted_does_not_start_the_step(tmp_path: Path) -> None:
    """The mount runs in the step's own process before exec: when it fails (here its mount
    point is gone), nothing runs and the step ends as a layer that cannot be made does."""
    from harness.loop.contain.layer import MOUNT_FAILED
    from harness.loop.steps import run_step

    source = tmp_path / "wt"
    source.mkdir()
    made = make_layer(source)
    try:
        if made.prepare is None:
            need_tool("an overlay in a user namespace (Linux 5.11)")
        (made.folder / "merged").rmdir()
        marker = tmp_path / "ran"
        result = run_step(
            ["touch", os.fspath(marker)], source, dict(os.environ), b"", 5, prepare=made.prepare
        )
        assert (result.exit_code, result.output_tail) == (126, MOUNT_FAILED + "\n")
        assert not marker.exists()
    finally:
        made.remove()
