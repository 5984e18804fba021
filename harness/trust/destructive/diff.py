"""Parsing `git diff -U0 --no-renames --no-color` into one FileChange per file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FileChange:
    """One file of a unified diff: its status and the lines it adds and removes."""

    path: str
    status: str  # "A" added, "M" modified (content or mode), "D" deleted
    added: tuple[tuple[int, str], ...]  # (new line number, text)
    removed: tuple[tuple[int, str], ...]  # (old line number, text)
    binary: bool


_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DEV_NULL = "/dev/null"
# git's default prefixes are a/ and b/; diff.mnemonicPrefix makes them c/ i/ w/ o/.
_DIFF_PREFIXES = ("a/", "b/", "c/", "i/", "w/", "o/")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL_RE = re.compile(r"[0-7]{1,3}")


@dataclass
class _FileBuilder:
    header_path: str
    status: str = "M"
    old_path: str | None = None
    new_path: str | None = None
    binary: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)
    old_line: int = 0
    new_line: int = 0
    old_left: int = 0
    new_left: int = 0

    def in_hunk(self) -> bool:
        return self.old_left > 0 or self.new_left > 0

    def hunk_line(self, line: str) -> bool:
        """Take one body line of the current hunk; False when it is not one (malformed)."""
        tag, text = line[:1], line[1:]
        if tag == "+" and self.new_left:
            self.added.append((self.new_line, text))
            self.new_line, self.new_left = self.new_line + 1, self.new_left - 1
        elif tag == "-" and self.old_left:
            self.removed.append((self.old_line, text))
            self.old_line, self.old_left = self.old_line + 1, self.old_left - 1
        elif tag in (" ", "") and self.old_left and self.new_left:
            # Context (only with -U1 and up); some tools strip the lone space of a blank one.
            self.old_line, self.old_left = self.old_line + 1, self.old_left - 1
            self.new_line, self.new_left = self.new_line + 1, self.new_left - 1
        elif tag != "\\":  # "\ No newline at end of file" belongs to the hunk
            self.old_left = self.new_left = 0
            return False
        return True

    def header_line(self, line: str) -> None:
        hunk = _HUNK_RE.match(line)
        if hunk:
            self._start_hunk(hunk)
        elif line.startswith("new file mode"):
            self.status = "A"
        elif line.startswith("deleted file mode"):
            self.status = "D"
        elif line.startswith(("--- ", "+++ ")):
            self._file_line(line[:3], _diff_path(line[4:]))
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            self.binary = True
        elif line.startswith(("rename to ", "copy to ")):
            # Renames only appear without --no-renames; the new name is the one that counts.
            self.new_path = _unquote(line.split(" ", 2)[2])

    def _start_hunk(self, hunk: re.Match[str]) -> None:
        self.old_line, self.new_line = int(hunk[1]), int(hunk[3])
        self.old_left = 1 if hunk[2] is None else int(hunk[2])
        self.new_left = 1 if hunk[4] is None else int(hunk[4])

    def _file_line(self, marker: str, path: str | None) -> None:
        if marker == "---":
            self.old_path = path
            self.status = "A" if path is None else self.status
        else:
            self.new_path = path
            self.status = "D" if path is None else self.status

    def finish(self) -> FileChange:
        return FileChange(
            path=self.new_path or self.old_path or self.header_path,
            status=self.status,
            added=tuple(self.added),
            removed=tuple(self.removed),
            binary=self.binary,
        )


def parse_diff(diff_text: str) -> list[FileChange]:
    """Every file of a `git diff` in order: binary, mode-only, added and deleted included."""
    changes: list[FileChange] = []
    current: _FileBuilder | None = None
    # Split on "\n" only: str.splitlines would also break at \x0b, \x1c, \u2028... in content.
    for raw in diff_text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw  # CRLF files: the \r is not content
        if current is not None and current.in_hunk() and current.hunk_line(line):
            continue
        if line.startswith("diff --git "):
            if current is not None:
                changes.append(current.finish())
            current = _FileBuilder(_header_path(line[len("diff --git ") :]))
        elif current is not None:
            current.header_line(line)
    if current is not None:
        changes.append(current.finish())
    return changes


def _header_path(rest: str) -> str:
    """The path of `diff --git a/P b/P`; both halves name the same path without renames."""
    if rest.startswith('"'):
        return _strip_prefix(_take_quoted(rest)[0])
    half = len(rest) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        first, second = _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
        if first == second:
            return first
    cut = rest.find(" b/")
    return _strip_prefix(rest[:cut] if cut > 0 else rest)


def _diff_path(text: str) -> str | None:
    """The path of a `---`/`+++` line, None for /dev/null."""
    # git appends a tab when the name has a space; a name with a tab in it is quoted.
    text = text.split("\t", 1)[0]
    return None if text == _DEV_NULL else _strip_prefix(_unquote(text))


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(_DIFF_PREFIXES) else path


def _unquote(text: str) -> str:
    return _take_quoted(text)[0] if text.startswith('"') else text


def _take_quoted(text: str) -> tuple[str, str]:
    """Decode git's C-style quoted name at the start of text; return it and the rest."""
    out, index = bytearray(), 1
    while index < len(text) and text[index] != '"':
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            octal = _OCTAL_RE.match(text, index + 1)
            if octal:  # core.quotePath writes non-ASCII bytes as \ooo
                out.append(int(octal[0], 8) & 0xFF)
                index = octal.end()
                continue
            char = text[index + 1]
            index += 1
            if char in _C_ESCAPES:
                out.append(_C_ESCAPES[char])
                index += 1
                continue
        out.extend(char.encode("utf-8", "surrogateescape"))
        index += 1
    return out.decode("utf-8", "replace"), text[index + 1 :]
