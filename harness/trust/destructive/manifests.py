"""dependencies: manifests that run code on install, and where packages come from.

A `postinstall` script runs on every `npm install`; a new `--extra-index-url` or
`registry=` makes the next install fetch packages from another server. Each rule reads
only the files it names (docs/specs/destructive.md lists them and their keys).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.file_rule import FileRule, Found, Versions
from harness.trust.destructive.paths import PathFacts, glob_any, name_globs

# ---- package.json lifecycle scripts ---------------------------------------------------

# What `npm install` and `npm ci` run in the package (npm's "Life Cycle Operation Order"),
# `dependencies` (npm 8+, after node_modules changed), and prepack/postpack (npm packs a
# git dependency, and runs its prepare, when another project installs it).
LIFECYCLE_SCRIPTS = (
    "preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare",
    "postprepare", "prepack", "postpack", "dependencies",
)  # fmt: skip
_LIFECYCLE_LINE_RE = re.compile(r'"(' + "|".join(LIFECYCLE_SCRIPTS) + r')"\s*:\s*"')
_WORD_SPLIT_RE = re.compile(r"[\s;&|()<>\"'`=]+")


def _is_package_json(p: PathFacts) -> bool:
    return p.name == "package.json"


def _lifecycle_hits(change: FileChange, facts: PathFacts, versions: Versions) -> Found:
    new = _scripts(versions.new)
    if new is None:  # unknown or not JSON: any lifecycle key on an added line
        return [(n, t) for n, t in change.added if _LIFECYCLE_LINE_RE.search(t)]
    old = _scripts(versions.old) or {}
    found: Found = []
    for name, why in _run_on_install(new).items():
        if new[name] != old.get(name):
            line = _key_line(change, name)
            found.append((line, f"scripts.{name}{why}: {new[name]}"))
    return sorted(found, key=lambda item: item[0] or 0)


def _scripts(text: str | None) -> dict[str, str] | None:
    """A package.json's `scripts`; None when the text is unknown or not a JSON object."""
    if text is None:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    scripts = document.get("scripts")
    if not isinstance(scripts, dict):
        return {}
    return {name: value for name, value in scripts.items() if isinstance(value, str)}


def _run_on_install(scripts: Mapping[str, str]) -> dict[str, str]:
    """Each script an install runs, with why: a lifecycle one (""), one whose name is a
    word of a script it runs (`prepare: npm run build` runs build), or the pre/post
    script of one of those."""
    why = {name: "" for name in LIFECYCLE_SCRIPTS if name in scripts}
    queue = list(why)
    while queue:
        runner = queue.pop(0)
        words = set(_WORD_SPLIT_RE.split(scripts[runner]))
        named = {name: f" (run by {runner})" for name in scripts if name in words}
        hooks = {f"{p}{runner}": f" (runs with {runner})" for p in ("pre", "post")}
        for name, reason in (named | hooks).items():
            if name in scripts and name not in why:
                why[name] = reason
                queue.append(name)
    return why


def _key_line(change: FileChange, name: str) -> int | None:
    key = re.compile(rf'"{re.escape(name)}"\s*:')
    return next((number for number, text in change.added if key.search(text)), None)


# ---- package indexes and registries: line formats ----------------------------------------

_REQUIREMENTS_GLOBS = name_globs(
    "*requirements*.txt", "*requirements*.in", "*constraints*.txt", "*constraints*.in"
)
_PIP_INDEX_RE = re.compile(
    r"^\s*(?:--(?:extra-)?index-url|--find-links)(?:\s*=\s*|\s+)\S|^\s*-[if]\s*\S"
)
_PIP_CONF_RE = re.compile(r"^\s*(?:extra[-_]index[-_]url|index[-_]url|find[-_]links)\s*[=:]", re.I)
_NPMRC_RE = re.compile(r"^\s*(?:@[\w.-]+:)?registry\s*=", re.I)
_YARNRC_RE = re.compile(r'^\s*"?(?:@[\w.-]+:)?registry"?\s+\S')
_YARNRC_YML_RE = re.compile(r"^\s*npmRegistryServer\s*:")
_INDEX_LINE_RES = {
    "pip.conf": _PIP_CONF_RE,
    "pip.ini": _PIP_CONF_RE,
    ".npmrc": _NPMRC_RE,
    ".yarnrc": _YARNRC_RE,
    ".yarnrc.yml": _YARNRC_YML_RE,
    ".yarnrc.yaml": _YARNRC_YML_RE,
}


def _index_line_re(p: PathFacts) -> re.Pattern[str] | None:
    if p.name in _INDEX_LINE_RES:
        return _INDEX_LINE_RES[p.name]
    requirements = glob_any(p.name, _REQUIREMENTS_GLOBS)
    in_folder = p.suffix in (".txt", ".in") and "requirements" in p.dirs
    return _PIP_INDEX_RE if requirements or in_folder else None


def _is_index_config(p: PathFacts) -> bool:
    return _index_line_re(p) is not None


def _index_line_hits(change: FileChange, facts: PathFacts, versions: Versions) -> Found:
    """Added and removed lines that set an index or registry: removing a private index
    sends the next install to the public one, where anyone can publish its names."""
    pattern = _index_line_re(facts)
    assert pattern is not None  # `reads` chose this file
    return [
        (number, side + text)
        for side, lines in (("", change.added), ("removed line: ", change.removed))
        for number, text in lines
        if pattern.search(text)
    ]


# ---- package indexes: TOML manifests -----------------------------------------------------

_UV_KEYS = ("index", "index-url", "extra-index-url", "find-links")
# Where each TOML manifest names indexes; a list of tables gives its entries' `url`.
_TOML_INDEX_KEYS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "pyproject.toml": (
        *(("tool", "uv", key) for key in _UV_KEYS),
        *(("tool", "uv", "pip", key) for key in _UV_KEYS[1:]),
        ("tool", "poetry", "source"),
        ("tool", "pdm", "source"),
    ),
    "uv.toml": (*((key,) for key in _UV_KEYS), *(("pip", key) for key in _UV_KEYS[1:])),
    "pipfile": (("source",),),
}
_TOML_KEY_LINE_RE = re.compile(
    r"^\s*(?:url|index|index-url|extra-index-url|find-links)\s*=|"
    r"^\s*\[\[\s*(?:tool\.(?:uv\.index|poetry\.source|pdm\.source)|index|source)\s*\]\]"
)


def _is_toml_manifest(p: PathFacts) -> bool:
    return p.name in _TOML_INDEX_KEYS


def _toml_index_hits(change: FileChange, facts: PathFacts, versions: Versions) -> Found:
    """URLs an index key names in the new version and not the old (and the other way)."""
    keys = _TOML_INDEX_KEYS[facts.name]
    new, old = _toml_urls(versions.new, keys), _toml_urls(versions.old, keys)
    if new is None or old is None:  # unknown or not TOML: any index key on a changed line
        lines = (*change.added, *change.removed)
        return [(n, t) for n, t in lines if _TOML_KEY_LINE_RE.search(t)]
    found: Found = []
    for urls, other, lines, side in (
        (new, old, change.added, ""),
        (old, new, change.removed, ", removed line"),
    ):
        for url in sorted(set(urls) - set(other)):
            line = next((n for n, text in lines if url in text), None)
            found.append((line, f"{urls[url]}{side}: {url}"))
    return sorted(found, key=lambda item: item[0] or 0)


def _toml_urls(text: str | None, keys: Iterable[tuple[str, ...]]) -> dict[str, str] | None:
    """Each index URL a TOML manifest names, with its dotted key; None if not readable."""
    if text is None:
        return None
    import tomllib  # only when a TOML manifest changed

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    urls: dict[str, str] = {}
    for key in keys:
        value: object = document
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        urls |= dict.fromkeys(_urls_in(value), ".".join(key))
    return urls


def _urls_in(value: object) -> list[str]:
    """A string, the strings of a list, and the `url` of each table."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [url for item in value for url in _urls_in(item)]
    if isinstance(value, dict):
        return _urls_in(value.get("url"))
    return []


MANIFEST_FILE_RULES = (
    FileRule("npm-lifecycle-script", "dependencies", _is_package_json, _lifecycle_hits),
    FileRule("package-index-config", "dependencies", _is_index_config, _index_line_hits),
    FileRule("toml-package-index", "dependencies", _is_toml_manifest, _toml_index_hits),
)
