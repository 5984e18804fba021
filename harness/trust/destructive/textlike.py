"""Files git shows no lines of: those it calls binary (issue 13), and ignored ones.

A `.gitattributes` line (`*.py -diff`) or one NUL byte makes git show a file as
`Binary files differ`, with no lines for the classifier to read, while `sh` or Python still
runs it. A changed file whose name says source, or whose content says text (a `#!` line,
mostly printable bytes), is therefore diffed with `--text` whatever git thinks of it.

A file ignore rules hide is in no diff at all. The ignored files a build adds are listed
(`IgnoredWalk`), classified (`unseen_changes`) and, when a rule the build added hides them,
stopped at tamper (`hidden_by_new_rules`), except the caches that ignore themselves, which
are searched for what a later step would run instead (issue 27, docs/specs/trust.md).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from harness.store.gitrepo import run_git
from harness.store.worktree import Worktree
from harness.trust.destructive.diff import FileChange

TEXT_SUFFIXES = frozenset(
    [
        ".py",
        ".pyi",
        ".sh",
        ".bash",
        ".zsh",
        ".ksh",
        ".fish",
        ".sql",
        ".ddl",
        ".js",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".jsx",
        ".rb",
        ".pl",
        ".pm",
        ".php",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".scala",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".swift",
        ".lua",
        ".r",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".tf",
        ".hcl",
        ".yaml",
        ".yml",
        ".json",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".env",
        ".xml",
        ".html",
        ".md",
        ".txt",
        ".ps1",
        ".bat",
        ".cmd",
        ".mk",
        ".cmake",
        ".gradle",
        ".dockerfile",
        ".service",
        ".timer",
    ]
)
TEXT_NAMES = frozenset({"makefile", "dockerfile", "jenkinsfile", "procfile", "rakefile", "gemfile"})
PRINTABLE_SHARE = 0.9


def looks_like_text(path: str, head: bytes) -> bool:
    name = PurePosixPath(path)
    if name.suffix.lower() in TEXT_SUFFIXES or name.name.lower() in TEXT_NAMES:
        return True
    if head.startswith(b"#!"):
        return True
    chars = head.decode("utf-8", "replace")  # a cut last character costs one of 8192
    printable = sum(1 for c in chars if c in "\t\n\r" or (c != "\ufffd" and c.isprintable()))
    return bool(chars) and printable / len(chars) >= PRINTABLE_SHARE


def staged_diff(wt: Worktree, base: str) -> str:
    """The build's staged diff, with every text-like file git calls binary shown as text."""
    forced = [p for p in binary_paths(wt, base) if looks_like_text(p, staged_head(wt, p))]
    return wt.diff_text(base, forced)


def binary_paths(wt: Worktree, base: str) -> list[str]:
    """Staged paths changed since `base` that git's diff would call binary."""
    args = ["diff", "--cached", "--numstat", "-z", "--no-renames", "--no-ext-diff", base]
    out = run_git([*args, "--no-textconv"], wt.path).stdout.decode("utf-8", "replace")
    return [row[4:] for row in out.split("\0") if row.startswith("-\t-\t")]


def staged_head(wt: Worktree, path: str, size: int = 8192) -> bytes:
    """The first `size` bytes of `path` as staged (empty when it is not)."""
    blob = run_git(["cat-file", "blob", f":{path}"], wt.path, check=False)
    return blob.stdout[:size] if blob.returncode == 0 else b""


MAX_UNSEEN_BYTES = 1 << 20


def ignored_entries(wt: Worktree) -> set[str]:
    """Untracked files and folders git's ignore rules hide (a folder as one `name/` entry):
    never staged, so never in the diff, yet there when the judge runs."""
    args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
    out = run_git(args, wt.path).stdout.decode("utf-8", "replace")
    return {p for p in out.split("\0") if p}


class IgnoredWalk:
    """`ignored_entries`, started now and waited for later: the walk reads every folder of
    the tree, and runs beside the step's other git work (a checkpoint before the build, the
    scan after it) instead of after it (performance.md, "Scale"). Only the ledger's files
    and the index change meanwhile, and neither is ever an ignored untracked file.
    `started_ns`: the wall clock when it started (before the build), for `runs_later_in`."""

    def __init__(self, wt: Worktree) -> None:
        self.started_ns = time.time_ns()
        self._found: set[str] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._walk, args=(wt,), daemon=True)
        self._thread.start()

    def _walk(self, wt: Worktree) -> None:
        try:
            self._found = ignored_entries(wt)
        except BaseException as error:  # raised where the result is asked for
            self._error = error

    def entries(self) -> set[str]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._found is not None
        return self._found


def unseen_changes(wt: Worktree, paths: Sequence[str]) -> list[FileChange]:
    """New ignored files as added files, for the classifier (text by name or content)."""
    changes = []
    for path in paths:
        file = wt.path / path
        if path.endswith("/") or file.is_symlink() or not file.is_file():
            continue
        with file.open("rb") as handle:
            data = handle.read(MAX_UNSEEN_BYTES)
        binary = not looks_like_text(path, data[:8192])
        lines = () if binary else tuple(enumerate(data.decode("utf-8", "replace").splitlines(), 1))
        changes.append(FileChange(path, "A", lines, (), binary))
    return changes


@dataclass(frozen=True)
class Rule:
    """The ignore rule `git check-ignore -v` names for `path`: line `line` of `source`."""

    source: str
    line: str
    pattern: str
    path: str

    def hiding(self, path: str) -> str:
        return f"{path} ({self.source}:{self.line}: {self.pattern})"


@dataclass(frozen=True)
class LaterSteps:
    """What the steps after a build (judge, review) run from the worktree: the folders of
    their PATH that resolve inside it (`""` the top), and their commands' words."""

    path_dirs: frozenset[str] = frozenset()
    commands: tuple[str, ...] = ()

    def names(self, folder: str) -> bool:
        """A command names `folder` or a path in it (`.venv/bin/pytest`)."""
        named = re.compile(rf"(?<![\w.-]){re.escape(folder)}(?![\w.-])")
        return any(named.search(word) for word in self.commands)

    def runs_venv(self, folder: str) -> bool:
        """The venv at `folder` is what a later step runs: named, or its bin on PATH."""
        inside = any(d == folder or d.startswith(folder + "/") for d in self.path_dirs)
        return inside or self.names(folder)


def later_steps(root: Path, path_var: str | None, commands: Sequence[str]) -> LaterSteps:
    """`LaterSteps` for steps run in `root` with `PATH=path_var` (None: unset, so the
    default path; an empty entry, like a relative one, is the working folder, `root`)."""
    top = root.resolve()
    dirs = set()
    for entry in (os.defpath if path_var is None else path_var).split(os.pathsep):
        rel = os.path.relpath((top / entry).resolve(), top)
        if rel != ".." and not rel.startswith("../"):
            dirs.add("" if rel == "." else PurePosixPath(rel).as_posix())
    return LaterSteps(frozenset(dirs), tuple(commands))


# Self-ignoring folders (issue 27): pytest, mypy, ruff, virtualenv, uv and Python 3.13's
# venv write a `.gitignore` of `*` into the folder they make, so their caches are ignored
# by a rule of the build's own in a repository that never heard of them. Such a folder is
# allowed; what in it changes what a later step runs is not (docs/specs/trust.md).
SELF_IGNORE = frozenset({"*", "/*", "**", "/**"})
# Importable or loaded at start by Python: a module, bytecode, an extension, a .pth.
RUNS_LATER_SUFFIXES = frozenset({".py", ".pyc", ".pyo", ".pyw", ".pth", ".so", ".pyd"})
# Read from the folder a tool runs in (or a parent): pytest's, Python's packaging and
# test runners', pip's, coverage's and pdb's settings; make, npm, cargo and go files.
RUNS_LATER_NAMES = frozenset(
    {
        "pytest.ini",
        ".pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        ".coveragerc",
        ".pdbrc",
        "pip.conf",
        "pip.ini",
        "uv.toml",
        ".python-version",
        ".env",
        "makefile",
        "gnumakefile",
        "justfile",
        "package.json",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        "cargo.toml",
        "go.mod",
        "go.work",
    }
)
# A virtual environment's own folders, below the folder holding its `pyvenv.cfg`: what
# `python -m venv` and `pip install` put there (numpy's conftest.py, .pth files, scripts).
VENV_OWN = (
    ("bin",),
    ("Scripts",),
    ("include",),
    ("Include",),
    ("Lib", "site-packages"),
    ("lib", "python*", "site-packages"),
    ("lib", "pypy*", "site-packages"),
    ("lib64", "python*", "site-packages"),
)
MAX_HIDDEN = 200  # runs-later files listed from one folder; the gate names 20
# A file's ctime is set from the kernel's coarse clock (a tick behind time.time_ns()), and
# some filesystems keep whole seconds: a file the build changed may read up to that early.
CTIME_SLACK_NS = 2_000_000_000


def hidden_by_new_rules(
    wt: Worktree,
    base: str,
    paths: Sequence[str],
    later: LaterSteps | None = None,
    before: IgnoredWalk | None = None,
) -> list[str]:
    """Of `paths` (new ignored files), each one hidden by an ignore rule added since `base`:
    the rule git names for it (`check-ignore -v`) is a line of an ignore file in the tree
    whose version at `base` lacks that line. `path (source:line: pattern)` for each. Rules in
    `.git/info/exclude` and the user's excludes are watched as git configuration instead.

    A new folder that ignores itself (`self_ignoring`: pytest's cache, a venv) is not listed
    for that: what in it a later step runs is (`runs_later_in`), looked for through the
    whole folder, whether it is new or was there when `before` (the walk before the build)
    started, and then only what changed since."""
    files = [p for p in paths if not p.endswith("/")]
    known = {p for p in before.entries() if p.endswith("/.gitignore")} if before else set()
    if not files and not known:
        return []
    base_lines = BaseLines(wt, base)
    own = [rule for rule in ignore_rules(wt, files) if base_lines.lacks(rule)] if files else []
    selves = self_ignoring(wt, {r.source for r in own} | known, base_lines)
    found = [r.hiding(r.path) for r in own if not r.path.startswith(tuple(selves))]
    since = before.started_ns - CTIME_SLACK_NS if before else None
    for folder, rule in sorted(selves.items()):
        later_runs = runs_later_in(wt.path, folder.rstrip("/"), later or LaterSteps(), since)
        found += [rule.hiding(path) for path in later_runs]
    return found


def ignore_rules(wt: Worktree, files: Sequence[str]) -> list[Rule]:
    """The rule hiding each of `files`, for those an ignore rule hides."""
    given = "".join(f"{p}\0" for p in files).encode()
    args = ["check-ignore", "-v", "-z", "--stdin"]
    out = run_git(args, wt.path, input=given, check=False).stdout
    fields = out.decode("utf-8", "replace").split("\0")
    return [Rule(*row) for row in zip(*[iter(fields)] * 4, strict=False) if row[1].isdigit()]


class BaseLines:
    """The lines of each ignore file at `base` (None: not there), read once a build."""

    def __init__(self, wt: Worktree, base: str) -> None:
        self.wt, self.base = wt, base
        self._lines: dict[str, list[str] | None] = {}

    def of(self, source: str) -> list[str] | None:
        if source not in self._lines:
            shown = run_git(["show", f"{self.base}:{source}"], self.wt.path, check=False)
            text = shown.stdout.decode("utf-8", "replace")
            self._lines[source] = text.splitlines() if shown.returncode == 0 else None
        return self._lines[source]

    def lacks(self, rule: Rule) -> bool:
        """A rule of the tree's ignore files the base version did not have."""
        if rule.source.startswith((".git/", "/")):
            return False
        return rule.pattern not in (line.strip() for line in self.of(rule.source) or [])


def self_ignoring(wt: Worktree, sources: set[str], base_lines: BaseLines) -> dict[str, Rule]:
    """`folder/` for each new folder that ignores itself, of the ignore files `sources`, and
    the rule it does it by: its `.gitignore`, not there at `base`, is hidden by a `*` line of
    its own, and nothing under it is tracked. A tracked `.gitignore` never makes one."""
    sources = {s for s in sources if s.endswith("/.gitignore") and base_lines.of(s) is None}
    if not sources:
        return {}
    rules = {r.path: r for r in ignore_rules(wt, sorted(sources))}
    selves = {
        s.removesuffix(".gitignore"): rules[s]
        for s in sources
        if s in rules and rules[s].source == s and rules[s].pattern in SELF_IGNORE
    }
    if not selves:
        return selves
    specs = [f":(literal){folder}" for folder in selves]
    tracked = run_git(["ls-files", "-z", "--", *specs], wt.path).stdout.decode("utf-8", "replace")
    held = [p for p in tracked.split("\0") if p]
    # No folder inside another is one: git reads no .gitignore in a folder it ignores.
    return {d: r for d, r in selves.items() if not any(p.startswith(d) for p in held)}


def runs_later(path: str, entry: os.DirEntry[str], later: LaterSteps) -> bool:
    """A file that changes what a later step runs: importable by Python, a tool's settings
    read from the folder it runs in, or an executable in a folder on the later steps' PATH."""
    name = PurePosixPath(path)
    if name.suffix.lower() in RUNS_LATER_SUFFIXES or name.name.lower() in RUNS_LATER_NAMES:
        return True
    if path.endswith((".cargo/config", ".cargo/config.toml")):
        return True
    if path.rpartition("/")[0] not in later.path_dirs:
        return False
    return entry.is_file() and bool(entry.stat().st_mode & 0o111)  # links followed, as PATH


def changed_since(entry: os.DirEntry[str], since: int | None) -> bool:
    try:
        return since is None or entry.stat(follow_symlinks=False).st_ctime_ns >= since
    except OSError:  # gone since its folder was read (a process the build left): listed
        return True


def venv_place(parts: tuple[str, ...]) -> str:
    """Where `parts` (a folder below a venv's top) is: one of its own folders (`own`), on
    the way to one (`above`), or neither (`other`)."""
    place = "other"
    for own in VENV_OWN:
        if len(parts) <= len(own) and all(map(fnmatchcase, parts, own)):
            if len(parts) == len(own):
                return "own"
            place = "above"
    return place


def runs_later_in(root: Path, folder: str, later: LaterSteps, since: int | None) -> list[str]:
    """The runs-later files below `folder` changed at or after `since` (ctime, which no
    build can set back; None: all), links not followed, at most MAX_HIDDEN: every file when
    a later step names the folder; none in a venv's own folders unless it runs the venv.
    A folder that cannot be read is listed itself (`name/`): nobody looked inside."""
    found: list[str] = []
    # (folder, every file counts, its parts below the top of the venv it is on the way in)
    stack: list[tuple[str, bool, tuple[str, ...] | None]] = [(folder, later.names(folder), None)]
    while stack and len(found) < MAX_HIDDEN:
        rel, every, venv = stack.pop()
        if not every and (root / rel / "pyvenv.cfg").is_file():
            every = later.runs_venv(rel)
            venv = None if every else ()
        try:
            entries = list(os.scandir(root / rel))
        except OSError:
            found.append(rel + "/")
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                parts = None if venv is None else (*venv, entry.name)
                place = "other" if parts is None else venv_place(parts)
                if place != "own":
                    stack.append((path, every, parts if place == "above" else None))
            elif (every or runs_later(path, entry, later)) and changed_since(entry, since):
                found.append(path)
    return sorted(found[:MAX_HIDDEN])
