"""lock: a goal's flock, and the read-only probe that names its holder, with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen

import pytest

from harness.errors import Busy
from harness.store.lock import GoalLock, lock_holder

# A separate process takes the goal's lock, says so, and holds it until its input closes.
HOLDER = """
import sys
from pathlib import Path
from harness.store.lock import GoalLock
lock = GoalLock(Path(sys.argv[1]), "g1")
lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_lock_holder_names_the_process_holding_the_lock(tmp_path: Path, holder: Popen[str]) -> None:
    assert lock_holder(tmp_path / "g1.lock") == str(holder.pid)
    assert GoalLock(tmp_path, "g1").held_elsewhere()


def test_lock_holder_of_a_dead_holder_is_none(tmp_path: Path, holder: Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait()
    path = tmp_path / "g1.lock"
    assert path.read_text() == f"{holder.pid}\n"  # the file stays; the kernel dropped the flock
    assert lock_holder(path) is None


def test_lock_holder_of_no_file_or_a_free_lock_is_none(tmp_path: Path) -> None:
    assert lock_holder(tmp_path / "missing.lock") is None
    lock = GoalLock(tmp_path, "g1")
    with lock:
        pass
    assert lock_holder(lock.path) is None


def test_the_probe_writes_nothing_and_leaves_the_lock_free(tmp_path: Path) -> None:
    lock = GoalLock(tmp_path, "g1")
    lock.path.write_text("12345\n")
    before = lock.path.stat()
    assert lock_holder(lock.path) is None
    after = lock.path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    with lock:  # the probe's shared flock went with its descriptor
        assert lock.path.read_text() == f"{os.getpid()}\n"


def test_a_held_lock_is_busy_for_another_process(tmp_path: Path, holder: Popen[str]) -> None:
    with pytest.raises(Busy, match=f"process {holder.pid} is running it"):
        GoalLock(tmp_path, "g1").acquire()
