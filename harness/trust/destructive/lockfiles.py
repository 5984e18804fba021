"""dependencies: a lock file whose packages now come from a host they did not come from.

A lock file pins each package to a URL; moving one to another host (`resolved` in
`package-lock.json`) makes the next `npm ci` fetch it from there, however small the diff.
Only the URLs of source keys count (not `funding` or homepage URLs), and a host counts as
new when some added line names it and the old version names it nowhere. Lock files are
large: the old version is read only when an added line names a host that no removed line
names (a version bump on the same host removes its old line with it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.file_rule import FileRule, Found, Versions
from harness.trust.destructive.paths import PathFacts

# scheme://[user@]host: `https://`, `git+ssh://git@github.com/…`.
_URL = r"[a-z][a-z0-9+.-]*://(?:[^/@\s\"'\]]*@)?(?P<host>[^/:\s\"'?#\[\]]+)"
_NPM_HOSTS = frozenset({"registry.npmjs.org", "registry.yarnpkg.com"})
_PYTHON_HOSTS = frozenset({"pypi.org", "files.pythonhosted.org"})


@dataclass(frozen=True)
class _Lock:
    pattern: re.Pattern[str]  # a source key, then its URL
    public: frozenset[str]  # the public registry: what a new lock file may name


def _lock(key: str, public: frozenset[str]) -> _Lock:
    return _Lock(re.compile(key + _URL, re.MULTILINE | re.IGNORECASE), public)


_NPM_LOCK = _lock(r'"(?:resolved|version)"\s*:\s*"', _NPM_HOSTS)
LOCKS: Mapping[str, _Lock] = {
    "package-lock.json": _NPM_LOCK,
    "npm-shrinkwrap.json": _NPM_LOCK,
    # v1 `resolved "https://…"`; berry `resolution: "name@https://…"`.
    "yarn.lock": _lock(r'^\s*(?:resolved:?\s+"?|resolution:\s*"@?[^@"\s]+@)', _NPM_HOSTS),
    "pnpm-lock.yaml": _lock(r"\b(?:tarball|repo):\s*['\"]?", _NPM_HOSTS),
    "poetry.lock": _lock(r'^\s*url\s*=\s*"', _PYTHON_HOSTS),
    "uv.lock": _lock(r'\b(?:registry|url|git)\s*=\s*"', _PYTHON_HOSTS),
    "pipfile.lock": _lock(r'"(?:url|git|file)"\s*:\s*"', _PYTHON_HOSTS),
}


def _is_lockfile(p: PathFacts) -> bool:
    return p.name in LOCKS


def _new_host_hits(change: FileChange, facts: PathFacts, versions: Versions) -> Found:
    lock = LOCKS[facts.name]
    added: dict[str, tuple[int | None, str]] = {}  # each host, and the first line naming it
    for number, text in _added_lines(change, versions):
        for match in lock.pattern.finditer(text):
            added.setdefault(match["host"].lower(), (number, text))
    fresh = set(added) - _hosts(lock, (text for _, text in change.removed))
    if fresh:
        fresh -= _old_hosts(change, lock, versions)
    return [(added[h][0], f"new source host {h}: {added[h][1].strip()}") for h in sorted(fresh)]


def _added_lines(change: FileChange, versions: Versions) -> Iterable[tuple[int | None, str]]:
    """The added lines; for a file git shows as binary (`-diff`), the new version's."""
    if not change.binary:
        return change.added
    return ((None, text) for text in (versions.new or "").splitlines())


def _old_hosts(change: FileChange, lock: _Lock, versions: Versions) -> set[str]:
    """The hosts the old version names: the public registry's for a new lock file, and
    without the old text, those of the removed lines and the public registry's."""
    old = None if change.status == "A" else versions.old
    return _hosts(lock, [old]) if old is not None else set(lock.public)


def _hosts(lock: _Lock, texts: Iterable[str]) -> set[str]:
    return {match["host"].lower() for text in texts for match in lock.pattern.finditer(text)}


LOCKFILE_RULES = (FileRule("lockfile-source-host", "dependencies", _is_lockfile, _new_host_hits),)
