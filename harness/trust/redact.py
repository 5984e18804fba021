"""The one redactor: secrets taken out of every text the harness records or prints.

Two kinds of secret are replaced, each by a receipt `[redacted:NAME sha256:<12 hex>]`
(NAME: the variable, or the token's kind; the digest: of the secret itself, so an auditor
holding the value can confirm which one leaked without the record ever showing it):

- the value of every environment variable the steps receive whose name says secret
  (`SECRET_NAME`), or that the config's `redact_env` lists, when it is at least
  `MIN_VALUE` characters long: as it is, base64-encoded (standard and URL alphabets, at
  each of the three alignments it can have inside a longer encoded text) and URL-encoded;
  and a tail of one at least `MIN_VALUE` long at the very start of a text (what is left
  of it where an output tail was cut);
- well-known token shapes, whoever held them (`SHAPES`).

Speed (performance.md, `redact_1mib`): each form is looked for with `str.find` (C, no
regular expression); a shape's regular expression runs only on a text holding its literal
prefix. A maintained detector library was measured first and not used: detect-secrets
1.5.0 scans a MiB of agent output in 10.1 s with its default plugins (0.12 s to import),
where this takes milliseconds (docs/specs/trust.md, "Redaction").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_VALUE = 8
# Names of variables whose values are secrets, whatever their value looks like.
SECRET_NAME = re.compile(
    r"(?:_KEY|_TOKEN|_SECRET|_CREDENTIALS?)\Z|PASSWORD|PASSWD|\AAWS_.*KEY|"
    r"\A(?:ANTHROPIC_API_KEY|OPENAI_API_KEY|CODEX_API_KEY|GITHUB_TOKEN|GH_TOKEN|"
    r"HARNESS_PUSH_TOKEN|HARNESS_SECRET|HARNESS_KEY_PASSPHRASE)\Z",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Shape:
    name: str
    markers: tuple[str, ...]  # literal text every match holds: the regex runs only then
    pattern: re.Pattern[str]
    word_start: bool = False  # only where a word starts (`sk-` ends `task-`, `disk-`)


_B64URL = r"[A-Za-z0-9_\-]"
# Each pattern starts with a literal, so the regular expression engine skips to it; where a
# match must start a word, that is checked on the character before it (`_starts_word`).
SHAPES = (
    Shape(
        "private-key",
        ("-----BEGIN",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    Shape(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"g(?:h[pousr]_[A-Za-z0-9]{30,255}|ithub_pat_[A-Za-z0-9_]{22,255})"),
    ),
    Shape("anthropic-key", ("sk-ant-",), re.compile(rf"sk-ant-{_B64URL}{{20,}}")),
    Shape(
        "openai-key",
        ("sk-",),
        re.compile(
            rf"sk-(?!ant-)(?=[A-Za-z0-9_\-]*[0-9])(?:proj-|svcacct-|admin-)?{_B64URL}{{20,}}"
        ),
        word_start=True,
    ),
    Shape(
        "aws-access-key-id", ("AKIA", "ASIA"), re.compile(r"A(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Z])")
    ),
    Shape("slack-token", ("xox",), re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    Shape("jwt", ("eyJ",), re.compile(rf"eyJ{_B64URL}{{8,}}\.eyJ{_B64URL}{{8,}}\.{_B64URL}{{8,}}")),
)
_WORD = re.compile(r"[A-Za-z0-9_]")
_CUT = re.compile(r"\[… [0-9]+ characters cut\]\n")  # loop/recorder.py:fit_text


def _starts_word(text: str, start: int) -> bool:
    return start == 0 or not _WORD.match(text, start - 1)


def _matches(shape: Shape, text: str) -> list[re.Match[str]]:
    found = shape.pattern.finditer(text)
    return [m for m in found if not shape.word_start or _starts_word(text, m.start())]


# Event keys whose values the harness makes itself (commit, tree and call ids, hashes,
# ledger heads): never a step's text, so never redacted.
HARNESS_IDS = frozenset(
    {
        "tree",
        "commit",
        "base",
        "call_id",
        "gate_commit",
        "control_commit",
        "goal_sha256",
        "owners_sha256",
        "signature_sha256",
        "ledger",
    }
)


def receipt(name: str, secret: str) -> str:
    digest = hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"[redacted:{name} sha256:{digest}]"


def secret_names(env: Mapping[str, str], listed: Iterable[str] = ()) -> list[str]:
    """The variables of `env` whose values are redacted: a secret's name, or listed."""
    chosen = set(listed)
    return sorted(name for name in env if name in chosen or SECRET_NAME.search(name))


@dataclass(frozen=True)
class Redactor:
    """Replaces the secrets it was made with (`for_env`) and every token shape."""

    forms: tuple[tuple[str, str], ...] = ()  # (form, its receipt), longest form first
    # A cut-off tail's first MIN_VALUE characters → (where the tail starts in its value,
    # the value, its receipt): one dictionary look-up per text finds a tail.
    tails: Mapping[str, tuple[tuple[int, str, str], ...]] = field(default_factory=dict)

    @classmethod
    def for_env(cls, env: Mapping[str, str], listed: Iterable[str] = ()) -> Redactor:
        forms: dict[str, str] = {}
        tails: dict[str, list[tuple[int, str, str]]] = {}
        for name in secret_names(env, listed):
            value = env[name]
            if len(value) < MIN_VALUE:
                continue
            mark = receipt(name, value)
            for start in range(1, len(value) - MIN_VALUE + 1):
                tails.setdefault(value[start : start + MIN_VALUE], []).append((start, value, mark))
            for form in encoded_forms(value):
                forms.setdefault(form, mark)
        ordered = sorted(forms.items(), key=lambda item: -len(item[0]))
        # Longest tail first: where two values share a stretch, the longer cut is replaced.
        heads = {head: tuple(sorted(found)) for head, found in tails.items()}
        return cls(tuple(ordered), heads)

    def text(self, text: str) -> str:
        """`text` with every known secret and token shape replaced by its receipt."""
        for form, mark in self.forms:
            if form in text:
                text = text.replace(form, mark)
        text = self._cut_tail(text)
        for shape in SHAPES:
            if any(marker in text for marker in shape.markers):
                text = _replace(shape, text)
        return text

    def _cut_tail(self, text: str) -> str:
        """A secret's tail where a text starts: what a bounded capture or `fit_text`'s cut
        (`[… N characters cut]` and a newline) left of it."""
        cut = _CUT.match(text)
        head, rest = (text[: cut.end()], text[cut.end() :]) if cut else ("", text)
        for start, value, mark in self.tails.get(rest[:MIN_VALUE], ()):
            if rest.startswith(value[start:]):
                return head + mark + rest[len(value) - start :]
        return text

    def data(self, value: Any) -> Any:
        """Every string inside `value` (dicts, lists) redacted; keys and numbers as they are,
        and the ids the harness itself made (`HARNESS_IDS`), which later steps compare:
        an id is never a step's output, and a hex id that happened to hold a short
        secret's form must not stop being the id."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                key: item if key in HARNESS_IDS else self.data(item) for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value

    def found(self, text: str) -> list[str]:
        """The receipts of the secrets and token shapes `text` holds (for scans)."""
        marks = [mark for form, mark in self.forms if form in text]
        for shape in SHAPES:
            if any(marker in text for marker in shape.markers):
                marks += [receipt(shape.name, m.group(0)) for m in _matches(shape, text)]
        return list(dict.fromkeys(marks))


NO_SECRETS = Redactor()


def _replace(shape: Shape, text: str) -> str:
    found = _matches(shape, text)
    if not found:
        return text
    parts, at = [], 0
    for match in found:
        parts += [text[at : match.start()], receipt(shape.name, match.group(0))]
        at = match.end()
    return "".join([*parts, text[at:]])


def encoded_forms(value: str) -> list[str]:
    """`value` as it is, URL-encoded, and base64-encoded: the characters its bytes alone
    decide at each of the three alignments it can have in an encoded text, alone or inside a
    longer one (when at least MIN_VALUE of them)."""
    import base64  # only a run whose environment holds a secret pays for these
    import urllib.parse

    raw = value.encode("utf-8", "surrogateescape")
    forms = [value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)]
    # The whole value's encoding holds its alignment-0 core: the cores are enough.
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for shift in range(3):
            coded = encode(b"\0" * shift + raw).decode()
            first = -(-8 * shift // 6)  # the first character made of the value's bits only
            last = 8 * (shift + len(raw)) // 6  # past the last such character
            core = coded[first:last]
            if len(core) >= MIN_VALUE:
                forms.append(core)
    return list(dict.fromkeys(form for form in forms if len(form) >= MIN_VALUE))
