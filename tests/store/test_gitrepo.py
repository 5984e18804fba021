"""gitrepo: finding the repository, the checked-out ref, and reading objects in one process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InvalidInput
from harness.store.gitrepo import GitError, Repo, installed_git, run_git, safe_config, start_git
from harness.store.gitversion import fsync_config, git_version, needs_ref_fsync
from harness.store.objects import ObjectReader
from tests.tools import needs_command


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@example.com")
    (root / "goals").mkdir()
    (root / "goals" / "a.yaml").write_text("id: a\n")
    (root / "goals" / "with space.yaml").write_text("x\n")
    (root / "goals" / "é.yaml").write_text("y\n")
    (root / "empty").write_bytes(b"")
    (root / "binary").write_bytes(bytes(range(256)) * 3)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    return root


def test_reads_blobs_trees_and_commits_through_one_process(repo: Path) -> None:
    reader = ObjectReader(repo)
    head = git(repo, "rev-parse", "HEAD")
    try:
        assert reader.commit_id("refs/heads/main") == head
        assert reader.commit_id("main") == head
        assert reader.blob(f"{head}:goals/a.yaml") == b"id: a\n"
        assert reader.blob(f"{head}:goals/with space.yaml") == b"x\n"
        assert reader.blob(f"{head}:empty") == b""
        assert reader.blob(f"{head}:binary") == bytes(range(256)) * 3
        assert sorted(reader.names(f"{head}:goals")) == ["a.yaml", "with space.yaml", "é.yaml"]
        assert reader.names(head) == []  # a commit is not a tree
        assert "goals" in reader.names(f"{head}^{{tree}}")
        pid = reader._proc.pid if reader._proc else None
    finally:
        reader.close()
    assert pid is not None
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_absent_objects_are_none_and_the_process_keeps_answering(repo: Path) -> None:
    reader = ObjectReader(repo)
    try:
        assert reader.commit_id("refs/heads/nope") is None
        assert reader.blob("main:goals/missing.yaml") is None
        assert reader.blob("main:goals") is None  # a tree is not a blob
        assert reader.names("main:goals/a.yaml") == []  # a blob is not a tree
        assert reader.names("main:nothing") == []
        assert reader.blob("main:goals/a.yaml\nmain:empty") is None  # one line per request
        assert reader.blob("") is None
        assert reader.blob("main:goals/a.yaml") == b"id: a\n"
    finally:
        reader.close()


def test_a_closed_reader_starts_again_and_a_dead_one_is_an_error(repo: Path) -> None:
    reader = ObjectReader(repo)
    assert reader.blob("main:goals/a.yaml") == b"id: a\n"
    reader.close()
    reader.close()  # twice is harmless
    assert reader.blob("main:goals/a.yaml") == b"id: a\n"
    assert reader._proc is not None  # the only handle on the process; killed to test the error
    os.kill(reader._proc.pid, signal.SIGKILL)
    reader._proc.wait()
    with pytest.raises(GitError, match="stopped answering"):
        reader.blob("main:goals/a.yaml")
    assert reader.blob("main:goals/a.yaml") == b"id: a\n"  # a new process after the error
    reader.close()


class _CutOffOnce:
    """git's output as the reader sees it, interrupted (as by a signal) before the first
    answer is read: that answer stays in the pipe."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.cut = inner, False

    def readline(self) -> bytes:
        if not self.cut:
            self.cut = True
            raise KeyboardInterrupt
        return bytes(self.inner.readline())

    def read(self, size: int) -> bytes:
        return bytes(self.inner.read(size))

    def close(self) -> None:
        self.inner.close()


def test_a_read_cut_off_half_way_never_hands_its_answer_to_the_next(repo: Path) -> None:
    reader = ObjectReader(repo)
    assert reader.blob("main:goals/a.yaml") == b"id: a\n"
    assert reader._proc is not None  # the signal cannot be timed into a real read
    reader._proc.stdout = _CutOffOnce(reader._proc.stdout)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        reader.blob("main:empty")
    assert reader.blob("main:goals/a.yaml") == b"id: a\n"  # not the empty file's answer
    reader.close()


def test_discover_finds_the_main_worktree_from_anywhere_inside(repo: Path) -> None:
    main = Repo(repo.resolve(), (repo / ".git").resolve())
    assert Repo.discover(repo) == main
    assert Repo.discover(repo / "goals") == main
    assert Repo.discover(repo / ".git") == main
    linked = repo / ".harness" / "worktrees" / "a"
    git(repo, "worktree", "add", "-q", "-b", "harness/a", str(linked))
    assert Repo.discover(linked) == main


def test_discover_refuses_a_bare_repository_and_a_plain_folder(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with pytest.raises(InvalidInput, match="bare repositories are not supported"):
        Repo.discover(bare)
    plain = tmp_path / "plain"  # the temporary folder is in no repository
    plain.mkdir()
    with pytest.raises(InvalidInput, match="not inside a git repository"):
        Repo.discover(plain)


def test_checked_out_ref_is_the_branch_or_the_detached_commit(repo: Path, tmp_path: Path) -> None:
    found = Repo.discover(repo)
    assert found.checked_out_ref() == "refs/heads/main"
    git(repo, "checkout", "-q", "-b", "feature/x")
    assert found.checked_out_ref() == "refs/heads/feature/x"
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    assert found.checked_out_ref() == head
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", "-b", "trunk", str(empty))
    assert Repo.discover(empty).checked_out_ref() == "refs/heads/trunk"


def test_an_odd_head_file_is_read_by_git_not_taken_as_it_stands(repo: Path) -> None:
    found = Repo.discover(repo)
    head = repo / ".git" / "HEAD"
    head.write_bytes(b"ref: refs/heads/main\0\x1b[2K\x1b[1Gharness: all fine\n")
    assert found.checked_out_ref() == git(repo, "symbolic-ref", "-q", "HEAD")
    assert "\x1b" not in found.checked_out_ref()
    git(repo, "branch", "other")
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/other")
    head.write_text("ref: refs/heads/alias\n")
    assert found.checked_out_ref() == git(repo, "symbolic-ref", "-q", "HEAD")


def test_a_malformed_tree_is_an_error_and_only_commits_are_commits(repo: Path) -> None:
    bad = (
        subprocess.run(
            ["git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin"],
            cwd=repo,
            input=b"100644 no-nul-and-no-id",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    reader = ObjectReader(repo)
    try:
        with pytest.raises(GitError, match="malformed"):
            reader.names(bad)
        assert reader.commit_id(tree) is None
        assert reader.commit_id("HEAD") == git(repo, "rev-parse", "HEAD")
        assert reader.blob("main:goals/a.yaml\0junk") is None
    finally:
        reader.close()


@needs_command("strace")
def test_a_harness_commit_is_fsynced(repo: Path, tmp_path: Path) -> None:
    """core.fsync: the commit's objects and the branch ref reach the disk (issue 14)."""
    (repo / "new.txt").write_text("x\n")
    trace = tmp_path / "trace"
    code = (
        "import sys; from pathlib import Path; from harness.store.worktree import Worktree; "
        "Worktree(Path(sys.argv[1])).commit('durable')"
    )
    subprocess.run(
        [
            "strace",
            "-f",
            "-e",
            "trace=fsync,fdatasync",
            "-o",
            str(trace),
            sys.executable,
            "-c",
            code,
            str(repo),
        ],
        check=True,
        capture_output=True,
    )
    calls = [line for line in trace.read_text().splitlines() if "fsync(" in line]
    # The new blob, tree and commit objects and the ref: git 2.39 batches objects per command.
    assert len(calls) >= 2, trace.read_text()
    assert git(repo, "log", "-1", "--format=%s") == "durable"


def test_a_git_call_that_hangs_is_ended_by_its_timeout(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = repo / "slow.sh"
    hook.write_text("#!/bin/sh\nsleep 30\n")
    hook.chmod(0o755)
    git(repo, "config", "alias.slow", f"!{hook}")
    monkeypatch.setenv("HARNESS_GIT_TIMEOUT", "1")
    began = time.monotonic()
    with pytest.raises(GitError) as caught:
        run_git(["slow"], repo)
    assert time.monotonic() - began < 10
    assert str(caught.value) == (
        f"git slow did not finish in 1s in {repo} (a hung hook or remote?); "
        "HARNESS_GIT_TIMEOUT sets the limit"
    )


def test_the_fsync_option_is_chosen_by_the_git_version() -> None:
    """core.fsync from git 2.36; before it core.fsyncObjectFiles and the harness's own ref
    fsync (a git older than 2.36 is not installed here: the chooser is tested directly)."""
    assert git_version("git version 2.39.5\n") == (2, 39)
    assert git_version("git version 2.35.1.windows.2") == (2, 35)
    assert git_version("git version 1.9.0") == (1, 9)
    assert git_version("not git") is None
    assert fsync_config((2, 36)) == ("-c", "core.fsync=committed")
    assert fsync_config((3, 0)) == ("-c", "core.fsync=committed")
    assert fsync_config((2, 35)) == ("-c", "core.fsyncObjectFiles=true")
    assert fsync_config((1, 9)) == ("-c", "core.fsyncObjectFiles=true")
    assert fsync_config(None) == ("-c", "core.fsync=committed")
    assert [needs_ref_fsync(v) for v in ((2, 35), (2, 36), None)] == [True, False, False]


def test_the_installed_git_gets_its_own_fsync_option_and_no_warning(repo: Path) -> None:
    """The real git's version picks the option; every harness call then runs without the
    deprecation warning a wrong choice makes newer git print."""
    real = git_version(subprocess.run(["git", "version"], capture_output=True, text=True).stdout)
    assert installed_git() == real
    assert safe_config()[-2:] == fsync_config(real)
    (repo / "new.txt").write_text("x\n")
    proc = run_git(["add", "-A"], repo)
    assert proc.stderr == b""


@needs_command("strace")
def test_without_core_fsync_the_harness_fsyncs_objects_and_the_ref(
    repo: Path, tmp_path: Path
) -> None:
    """The fallback on the real git, as an older one would get it: git is asked for
    core.fsyncObjectFiles and the harness itself fsyncs the branch's ref file."""
    (repo / "new.txt").write_text("x\n")
    trace = tmp_path / "trace"
    code = (
        "import sys; from pathlib import Path; from harness.store import gitrepo, worktree; "
        "gitrepo.installed_git = worktree.installed_git = lambda: (2, 35); "
        "worktree.Worktree(Path(sys.argv[1])).commit('durable')"
    )
    strace = ["strace", "-f", "-e", "trace=execve,openat,fsync", "-o", str(trace)]
    subprocess.run(
        [*strace, sys.executable, "-c", code, str(repo)],
        check=True,
        capture_output=True,
    )
    text = trace.read_text()
    assert "core.fsyncObjectFiles=true" in text and "core.fsync=committed" not in text
    # The harness process (the first pid in the trace) opens and fsyncs refs/heads/main.
    pid = text.split(None, 1)[0]
    own = [line for line in text.splitlines() if line.startswith(pid + " ")]
    opened = [line for line in own if "refs/heads/main" in line and "openat(" in line]
    assert opened, text
    fd = opened[-1].rsplit("=", 1)[1].strip()
    assert any(f"fsync({fd})" in line for line in own), text
    assert git(repo, "log", "-1", "--format=%s") == "durable"


def test_only_empty_files_under_an_object_name_are_dropped(repo: Path) -> None:
    """A power cut's empty object goes; git's own temporary file, empty while another
    process (a second runner in the same clone) writes an object, is left alone: removing
    it made that process's `git add` fail (found by tests/e2e/test_many_runners.py)."""
    folder = repo / ".git" / "objects" / "ab"
    folder.mkdir(exist_ok=True)
    cut = folder / ("c" * 38)
    cut.write_bytes(b"")
    writing = folder / "tmp_obj_Xy12Zq"  # git's create_tmpfile() names it so
    writing.write_bytes(b"")
    assert Repo.discover(repo).drop_empty_objects() == ["ab" + "c" * 38]
    assert not cut.exists() and writing.exists()


def test_a_git_process_for_a_library_has_a_session_of_its_own(tmp_path: Path) -> None:
    """start_git's child (a push GitPython reads) is not in the run's process group, so a
    ^C sent to that group (a terminal, systemd's stop) reaches only the run (issue 30)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    child = start_git(["cat-file", "--batch"], tmp_path)
    try:
        assert os.getsid(child.pid) == child.pid != os.getsid(0)
        assert os.getpgid(child.pid) != os.getpgid(0)
    finally:
        child.kill()
        child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
