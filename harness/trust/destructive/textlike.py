"""Files git calls binary that are text all the same (issue 13).

A `.gitattributes` line (`*.py -diff`) or one NUL byte makes git show a file as
`Binary files differ`, with no lines for the classifier to read, while `sh` or Python still
runs it. A changed file whose name says source, or whose content says text (a `#!` line,
mostly printable bytes), is therefore diffed with `--text` whatever git thinks of it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import PurePosixPath

from harness.store.gitrepo import Worktree, run_git
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
    and the index change meanwhile, and neither is ever an ignored untracked file."""

    def __init__(self, wt: Worktree) -> None:
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


def hidden_by_new_rules(wt: Worktree, base: str, paths: Sequence[str]) -> list[str]:
    """Of `paths` (new ignored files), each one hidden by an ignore rule added since `base`:
    the rule git names for it (`check-ignore -v`) is a line of a tracked ignore file whose
    version at `base` lacks that line. `path (source:line: pattern)` for each. Rules in
    `.git/info/exclude` and the user's excludes are watched as git configuration instead."""
    files = [p for p in paths if not p.endswith("/")]
    if not files:
        return []
    given = "".join(f"{p}\0" for p in files).encode()
    args = ["check-ignore", "-v", "-z", "--stdin"]
    out = run_git(args, wt.path, input=given, check=False).stdout
    fields = out.decode("utf-8", "replace").split("\0")
    found = []
    for source, line, pattern, path in zip(*[iter(fields)] * 4, strict=False):
        if source.startswith((".git/", "/")) or not line.isdigit():
            continue
        before = run_git(["show", f"{base}:{source}"], wt.path, check=False)
        old = (
            before.stdout.decode("utf-8", "replace").splitlines() if before.returncode == 0 else []
        )
        if pattern not in (x.strip() for x in old):
            found.append(f"{path} ({source}:{line}: {pattern})")
    return found
