"""hidden_by_new_rules and self-ignoring folders (issue 27): the caches pytest, mypy, ruff
and a venv write ignore themselves with a `.gitignore` of `*`, a rule of the build's own; they
are allowed, while what in such a folder changes what a later step runs stays tamper."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.store.worktree import Worktree
from harness.trust.destructive.textlike import (
    CTIME_SLACK_NS,
    MAX_HIDDEN,
    IgnoredWalk,
    LaterSteps,
    hidden_by_new_rules,
    ignored_entries,
    later_steps,
)
from tests.managed import git

TINY_TEST = "def test_tiny():\n    assert 1 + 1 == 2\n"
CACHE_RULE = "# Created by a tool automatically.\n*\n"
TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


@dataclass
class Build:
    """A build in a real repository: what was ignored at its start, and its base commit."""

    wt: Worktree
    base: str
    before: IgnoredWalk

    @property
    def root(self) -> Path:
        return self.wt.path

    def write(self, files: dict[str, str], mode: int = 0o644) -> None:
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(mode)

    def run(self, *argv: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        subprocess.run(argv, cwd=self.root, env=env, check=True, capture_output=True)

    def hidden(self, later: LaterSteps | None = None) -> list[str]:
        """As the build's finish asks: its new ignored files, after staging its change."""
        self.wt.git("add", "-A")
        new = ignored_entries(self.wt) - self.before.entries()
        unseen = sorted(p for p in new if not p.endswith("/"))
        return hidden_by_new_rules(self.wt, self.base, unseen, later, self.before)

    def next(self) -> Build:
        """The next build, from the same base commit (nothing was committed)."""
        return Build(self.wt, self.base, walked(self.wt))


Start = Callable[..., Build]


def walked(wt: Worktree) -> IgnoredWalk:
    """The walk before a build, done before the build writes anything."""
    walk = IgnoredWalk(wt)
    walk.entries()
    return walk


@pytest.fixture
def start(tmp_path: Path) -> Start:
    """start(files) -> a build starting on a commit of README.md and `files`."""

    def make(files: dict[str, str] | None = None) -> Build:
        root = tmp_path / "repo"
        git(tmp_path, "init", "-q", "-b", "main", str(root))
        for name, text in {"README.md": "hi\n", **(files or {})}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        wt = Worktree(root)
        return Build(wt, wt.head(), walked(wt))

    return make


def fake_cache(build: Build, folder: str, files: dict[str, str], mode: int = 0o644) -> None:
    """A folder dressed as a cache: its own .gitignore of `*` and a CACHEDIR.TAG."""
    build.write({f"{folder}/.gitignore": CACHE_RULE, f"{folder}/CACHEDIR.TAG": TAG})
    build.write({f"{folder}/{name}": text for name, text in files.items()}, mode)


def make_venv(build: Build, folder: str = ".venv") -> Path:
    """A real `python -m venv` (without pip: no network), self-ignoring as Python 3.13's
    venv makes it; older ones write no .gitignore, so it is written as 3.13 writes it."""
    build.run(sys.executable, "-m", "venv", "--without-pip", folder)
    venv = build.root / folder
    if not (venv / ".gitignore").exists():
        (venv / ".gitignore").write_text(
            "# Created by venv; see https://docs.python.org/3/library/venv.html\n*\n"
        )
    # What `pip install` leaves: numpy ships a conftest.py, setuptools a .pth, pytest a script.
    build.write(
        {f"{folder}/{SITE}/numpy/conftest.py": "", f"{folder}/{SITE}/distutils-precedence.pth": ""}
    )
    build.write({f"{folder}/bin/pytest": "#!/bin/sh\n"}, 0o755)
    return venv


# ---- allowed: the caches real tools write ------------------------------------------------


def test_a_real_pytest_cache_is_allowed(start: Start) -> None:
    build = start({"test_tiny.py": TINY_TEST})
    build.run(sys.executable, "-m", "pytest", "-q", "test_tiny.py")
    assert (build.root / ".pytest_cache" / "CACHEDIR.TAG").is_file()
    assert build.hidden() == []


def test_real_mypy_and_ruff_caches_are_allowed(start: Start) -> None:
    build = start({"x.py": "x: int = 1\n"})
    build.run(sys.executable, "-m", "mypy", "x.py")
    build.run(sys.executable, "-m", "ruff", "check", "--isolated", "x.py")
    for cache in (".mypy_cache", ".ruff_cache"):
        assert (build.root / cache / "CACHEDIR.TAG").is_file()
    assert build.hidden() == []


def test_a_real_venv_is_allowed_with_its_own_conftest_pth_and_scripts(start: Start) -> None:
    build = start()
    make_venv(build)
    assert build.hidden(later_steps(build.root, "/usr/bin:/bin", ["python", "-m", "pytest"])) == []


def test_a_second_build_adding_to_a_cache_is_allowed(start: Start) -> None:
    build = start({"test_tiny.py": TINY_TEST})
    build.run(sys.executable, "-m", "pytest", "-q", "test_tiny.py")
    second = build.next()
    build.run(sys.executable, "-m", "pytest", "-q", "--lf", "test_tiny.py")
    build.write({".pytest_cache/v/cache/extra": "{}\n"})
    assert second.hidden() == []


# ---- still tamper: what a later step runs, in a folder that ignores itself -----------------


@pytest.mark.parametrize(
    "name",
    [
        "tests/conftest.py",
        "conftest.py",
        "deep/er/conftest.py",  # inside a folder git lists as one ignored entry
        "sitecustomize.py",
        "usercustomize.py",
        "evil.pth",
        "pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "noxfile.py",
        "setup.py",
        "helpers.py",  # any module: importable where the folder is on sys.path
        "__pycache__/helpers.cpython-311.pyc",
        "GNUmakefile",
        ".cargo/config.toml",
    ],
)
def test_what_a_later_step_runs_in_a_fake_cache_is_tamper(start: Start, name: str) -> None:
    build = start()
    fake_cache(build, "cache", {name: "x\n", "data.bin": "fine\n"})
    assert build.hidden() == [f"cache/{name} (cache/.gitignore:2: *)"]


def test_a_conftest_in_a_new_tests_folder_dressed_as_a_cache_is_tamper(start: Start) -> None:
    build = start()
    fake_cache(build, "tests", {"conftest.py": "def pytest_runtest_call(): pass\n"})
    assert build.hidden() == ["tests/conftest.py (tests/.gitignore:2: *)"]


def test_a_second_build_adding_a_conftest_to_a_cache_is_tamper(start: Start) -> None:
    build = start({"test_tiny.py": TINY_TEST})
    build.run(sys.executable, "-m", "pytest", "-q", "test_tiny.py")
    second = build.next()
    # In a folder that was there before: git lists no new entry for the build at all.
    build.write({".pytest_cache/v/conftest.py": ""})
    assert second.hidden() == [".pytest_cache/v/conftest.py (.pytest_cache/.gitignore:2: *)"]


def test_what_changed_before_the_build_is_not_listed_again(start: Start) -> None:
    # An owner unparked the goal on it: the next build is not stopped again for it.
    build = start()
    fake_cache(build, "cache", {"sub/conftest.py": ""})
    assert build.hidden() == ["cache/sub/conftest.py (cache/.gitignore:2: *)"]
    second = build.next()
    second.before.started_ns += 2 * CTIME_SLACK_NS  # as if it started well after the write
    assert second.hidden() == []


def test_a_pth_in_a_venv_outside_its_site_packages_is_tamper(start: Start) -> None:
    build = start()
    make_venv(build)
    build.write({".venv/lib/evil.pth": "import os\n", ".venv/sitecustomize.py": ""})
    assert build.hidden() == [
        ".venv/lib/evil.pth (.venv/.gitignore:2: *)",
        ".venv/sitecustomize.py (.venv/.gitignore:2: *)",
    ]


def test_an_executable_in_a_folder_on_the_judges_path_is_tamper(start: Start) -> None:
    build = start()
    fake_cache(build, "tools", {"pytest": "#!/bin/sh\nexit 0\n"}, 0o755)
    build.write({"tools/notes.txt": "not run\n"})
    outside = later_steps(build.root, "/usr/bin:/bin", [])
    assert build.hidden(outside) == []
    for path_var in (f"{build.root}/tools:/usr/bin", "tools:/usr/bin", "./tools/../tools"):
        on_path = later_steps(build.root, path_var, [])
        assert build.hidden(on_path) == ["tools/pytest (tools/.gitignore:2: *)"], path_var


@pytest.mark.parametrize(
    ("path_var", "judge"),
    [
        ("VENV/bin:/usr/bin", ["python", "-m", "pytest"]),  # its bin on the judge's PATH
        ("/usr/bin", [".venv/bin/python", "-m", "pytest"]),  # the judge names it
        ("/usr/bin", ["sh", "-c", ". .venv/bin/activate && pytest"]),
    ],
)
def test_a_venv_the_judge_runs_is_all_tamper(start: Start, path_var: str, judge: list[str]) -> None:
    build = start()
    venv = make_venv(build)
    later = later_steps(build.root, path_var.replace("VENV", str(venv)), judge)
    hidden = build.hidden(later)
    rule = " (.venv/.gitignore:2: *)"
    for own in (f"{SITE}/numpy/conftest.py", f"{SITE}/distutils-precedence.pth", "bin/pytest"):
        assert f".venv/{own}{rule}" in hidden
    assert f".venv/pyvenv.cfg{rule}" in hidden


def test_a_huge_hidden_folder_lists_at_most_max_hidden(start: Start) -> None:
    build = start()
    fake_cache(build, "cache", {f"m{i}.py": "" for i in range(MAX_HIDDEN + 50)})
    assert len(build.hidden()) == MAX_HIDDEN


# ---- the old behaviour, where the rule is no folder's self-ignore -------------------------


def test_a_line_added_to_a_tracked_gitignore_hides_nothing_new(start: Start) -> None:
    build = start({".gitignore": "*.log\n"})
    build.write({".gitignore": "*.log\nops.sh\n", "ops.sh": "rm -rf /srv\n", "a.log": "x\n"})
    assert build.hidden() == ["ops.sh (.gitignore:2: ops.sh)"]


def test_a_star_added_to_a_tracked_folders_gitignore_hides_nothing_new(start: Start) -> None:
    # tests/ holds tracked files: a .gitignore of `*` there is no new cache folder.
    build = start({"tests/test_a.py": TINY_TEST})
    fake_cache(build, "tests", {"data.json": "{}\n"})
    assert build.hidden() == [
        "tests/.gitignore (tests/.gitignore:2: *)",
        "tests/CACHEDIR.TAG (tests/.gitignore:2: *)",
        "tests/data.json (tests/.gitignore:2: *)",
    ]


def test_a_new_gitignore_that_is_no_self_ignore_hides_nothing_new(start: Start) -> None:
    build = start()
    build.write({"cache/.gitignore": "conftest.py\n.gitignore\n", "cache/conftest.py": ""})
    assert build.hidden() == [
        "cache/.gitignore (cache/.gitignore:2: .gitignore)",
        "cache/conftest.py (cache/.gitignore:1: conftest.py)",
    ]


def test_a_folder_whose_rule_lets_a_file_be_staged_is_no_new_cache(start: Start) -> None:
    # `!conftest.py` after the `*`: conftest.py is staged, so the folder holds a tracked file.
    build = start()
    build.write({"cache/.gitignore": "*\n!conftest.py\n", "cache/conftest.py": ""})
    build.write({"cache/data.bin": ""})
    assert build.hidden() == [
        "cache/.gitignore (cache/.gitignore:1: *)",
        "cache/data.bin (cache/.gitignore:1: *)",
    ]
    assert "cache/conftest.py" in build.wt.git("ls-files")


def test_a_cache_inside_a_new_cache_is_listed_by_the_outer_rule(start: Start) -> None:
    # git reads no .gitignore inside a folder it ignores: the inner one is no rule then.
    build = start()
    fake_cache(build, "outer/inner", {"conftest.py": ""})
    assert build.hidden() == ["outer/inner/conftest.py (outer/inner/.gitignore:2: *)"]
    second = build.next()
    fake_cache(second, "outer", {})
    assert second.hidden() == ["outer/inner/conftest.py (outer/.gitignore:2: *)"]


def test_a_folder_that_cannot_be_read_is_listed(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root every folder can be read: the refusal a user's unreadable folder meets.
    build = start()
    fake_cache(build, "cache", {"locked/data.bin": ""})
    scandir = os.scandir

    def refusing(path: Path) -> Iterator[os.DirEntry[str]]:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    assert build.hidden() == ["cache/locked/ (cache/.gitignore:2: *)"]
