"""What a path says about a file, and the globs that match paths.

Paths match whole segments, file names and extensions, never substrings: `authority.md`
is not auth.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass


def glob_regex(glob: str) -> str:
    """A regex for a repository-path glob: `*` and `?` stay in one segment, `**` spans any.

    As in .gitignore, a glob without a `/` matches a file name in any folder, a glob with
    one is anchored at the repository root, and a trailing `/` means everything under it.
    """
    if glob.endswith("/"):
        glob += "**"
    anchored = "/" in glob
    body = _glob_body(glob.lstrip("/"))
    return body if anchored else f"(?:.*/)?{body}"


def _glob_body(glob: str) -> str:
    out, index = [], 0
    while index < len(glob):
        piece, index = _glob_piece(glob, index)
        out.append(piece)
    return "".join(out)


def _glob_piece(glob: str, index: int) -> tuple[str, int]:
    if glob.startswith("**/", index):
        return "(?:.*/)?", index + 3
    if glob.startswith("**", index):
        return ".*", index + 2
    char = glob[index]
    if char == "*":
        return "[^/]*", index + 1
    if char == "?":
        return "[^/]", index + 1
    if char == "[":
        close = glob.find("]", index + 2)
        if close > 0:
            inner = glob[index + 1 : close].replace("\\", "\\\\")
            inner = "^" + inner[1:] if inner.startswith("!") else inner
            return f"[{inner}]", close + 1
    return re.escape(char), index + 1


def glob_any(name: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    return any(pattern.fullmatch(name) for pattern in patterns)


def name_globs(*globs: str) -> tuple[re.Pattern[str], ...]:
    """Lowercase file-name globs (no directories): `*` and `?` only."""
    return tuple(re.compile(glob_regex(glob)) for glob in globs)


_PROSE_SUFFIXES = frozenset(
    {".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc", ".asciidoc", ".org", ".rdoc"}
)
_PROSE_NAMES = frozenset({"readme", "changelog", "changes", "history", "license", "licence"})
_ASSET_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".bmp", ".css", ".scss"}
    | {".sass", ".less", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".pdf"}
)
# .txt files that are read by tools, not people.
_TEXT_NOT_PROSE = name_globs("*requirements*.txt", "*constraints*.txt", "cmakelists.txt")
SQL_SUFFIXES = frozenset({".sql", ".ddl", ".psql", ".pgsql", ".mysql", ".plsql", ".hql"})
# Camel-case words of a name segment: OAuth2Client -> O, Auth, 2, Client; JWTService -> JWT.
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CHUNK_RE = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class PathFacts:
    dirs: tuple[str, ...]  # lowercase directory segments
    name: str  # lowercase file name
    suffix: str  # lowercase last extension, "" for none and for dot files like .env
    words: frozenset[str]  # lowercase words of every directory and of the name's stem
    prose: bool  # documentation: line rules about code do not apply, path words do not
    asset: bool  # images, styles, fonts: path words do not apply

    def under(self, *sequence: str) -> bool:
        """Whether the directories include these consecutive segments."""
        width = len(sequence)
        return any(self.dirs[i : i + width] == sequence for i in range(len(self.dirs)))

    def in_dir(self, names: frozenset[str]) -> bool:
        return any(segment in names for segment in self.dirs)


def path_facts(path: str) -> PathFacts:
    segments = [segment for segment in path.split("/") if segment]
    name = segments[-1] if segments else ""
    stem, suffix = posixpath.splitext(name)
    words: set[str] = set()
    for segment in [*segments[:-1], stem]:
        words.update(_words(segment))
    lower = name.lower()
    return PathFacts(
        dirs=tuple(segment.lower() for segment in segments[:-1]),
        name=lower,
        suffix=suffix.lower(),
        words=frozenset(words),
        prose=_is_prose(lower, suffix.lower()),
        asset=suffix.lower() in _ASSET_SUFFIXES,
    )


def _is_prose(name: str, suffix: str) -> bool:
    if suffix in _PROSE_SUFFIXES:
        return not glob_any(name, _TEXT_NOT_PROSE)
    return name in _PROSE_NAMES


def _words(segment: str) -> set[str]:
    chunks = [chunk for chunk in _CHUNK_RE.split(segment) if chunk]
    words = {chunk.lower() for chunk in chunks}
    for chunk in chunks:
        words.update(word.lower() for word in _WORD_RE.findall(chunk))
    return words
