"""git_behaviour: changes to what git does to the bytes when it checks a commit out.

The owner reviews blobs; the ship step checks out the gate commit, and on the way git
applies `.gitattributes` (a clean/smudge `filter`, a `working-tree-encoding`, `eol` and
`text` conversion, `ident`), `.gitmodules` and `.lfsconfig`. With
`scripts/cleanup.sh working-tree-encoding=UTF-16LE` the reviewed blob reads as CJK text
and the checked-out file is `rm -rf /srv/data`. So a `.gitattributes` line that sets,
unsets or drops one of those attributes, or defines a macro, is a hit, naming the file,
the line and the attributes.
"""

from __future__ import annotations

from harness.trust.destructive.diff import FileChange
from harness.trust.destructive.file_rule import FileRule, Found, Versions
from harness.trust.destructive.paths import PathFacts

# What changes the checked-out bytes (filter, working-tree-encoding, eol, text and its old
# name crlf, ident), what the diff and merge show (diff, merge: `-diff` hides a file's
# lines from the classifier), and what `git archive` writes (export-ignore, export-subst).
_BEHAVIOUR = frozenset(
    {"filter", "working-tree-encoding", "eol", "text", "crlf", "ident", "diff", "merge"}
)
_BUILTIN_MACROS = frozenset({"binary"})  # `binary` is `-diff -merge -text`
_MACRO_PREFIX = "[attr]"
ROOT_ATTRIBUTES = ".gitattributes"  # macros are defined only there (and in .git/info)
_BLANK = " \t\r\n"
_QUOTE_LIMIT = 150  # of the quoted line, so that the attribute names are never cut


def _is_attributes_file(p: PathFacts) -> bool:
    return p.name == ".gitattributes"


def _attributes_hits(change: FileChange, facts: PathFacts, versions: Versions) -> Found:
    if change.binary:
        return [(None, "changed file git shows as binary: not read")]
    macros = _macros(change, versions)
    found: Found = []
    for removed, lines in ((False, change.added), (True, change.removed)):
        for number, text in lines:
            says = _line_says(text, macros)
            if says:
                side = ", removed line" if removed else ""
                found.append((number, f"{says}{side}: {text.strip()[:_QUOTE_LIMIT]}"))
    return found


def _macros(change: FileChange, versions: Versions) -> frozenset[str]:
    """Macro names a line may use: git's own and those the root file defines (as staged,
    or, when it cannot be read, in this change's added lines)."""
    root = versions.new if change.path == ROOT_ATTRIBUTES else versions.staged(ROOT_ATTRIBUTES)
    lines = root.splitlines() if root is not None else [text for _, text in change.added]
    defined = {parsed[0] for parsed in map(_parse, lines) if parsed and parsed[0]}
    return _BUILTIN_MACROS | defined


def _line_says(line: str, macros: frozenset[str]) -> str:
    """`eol, text` for a line setting those; `macro [attr]name (filter)` for a macro
    definition (every one counts: it can expand to anything); "" for anything else."""
    parsed = _parse(line)
    if parsed is None:
        return ""
    macro, tokens = parsed
    names = list(dict.fromkeys(_behaviour(token, macros) for token in tokens))
    names = [name for name in names if name]
    if macro is not None:
        return f"macro {_MACRO_PREFIX}{macro}" + (f" ({', '.join(names)})" if names else "")
    return ", ".join(names)


def _behaviour(token: str, macros: frozenset[str]) -> str:
    """The attribute a token (`eol=crlf`, `-text`, `!diff`) names, if it changes behaviour."""
    name = token.lstrip("-!").split("=", 1)[0]
    if name in _BEHAVIOUR or name.startswith("export-"):
        return name
    return f"{name} (macro)" if name in macros else ""


def _parse(line: str) -> tuple[str | None, list[str]] | None:
    """(the macro a line defines or None, its attribute tokens), as git reads the line;
    None for a blank line or a comment."""
    rest = line.lstrip(_BLANK)
    if not rest or rest.startswith("#"):
        return None
    if rest.startswith(_MACRO_PREFIX):
        name, *attributes = rest[len(_MACRO_PREFIX) :].split() or [""]
        return name, attributes
    if rest.startswith('"'):  # a C-quoted pattern
        return None, rest[_quoted_end(rest) :].split()
    return None, rest.split()[1:]


def _quoted_end(text: str) -> int:
    index = 1
    while index < len(text) and text[index] != '"':
        index += 2 if text[index] == "\\" else 1
    return index + 1


GIT_BEHAVIOUR_FILE_RULES = (
    FileRule("gitattributes-checkout", "git_behaviour", _is_attributes_file, _attributes_hits),
)
