"""Owners, signed approval statements and their SSHSIG signatures.

An owner approves a goal by signing a short statement with an ed25519 key listed in
`.harness/owners`. The signature is OpenSSH's SSHSIG format (PROTOCOL.sshsig in OpenSSH) and
the owners file is git's `allowed_signers` format, so an owner can check every approval with
`ssh-keygen -Y verify` and never has to trust this code's verifier alone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import TrustFailure, invalid, located
from harness.store.fsutil import atomic_write

# cryptography is imported where a key is used: reading and parsing approvals (all a run
# does for a goal resting at a gate) must not pay its import time.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ED25519 = "ssh-ed25519"
NAMESPACE = "harness"
OWNERS_FILE = ".harness/owners"
STATEMENT_HEADER = "harness-approval v1"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"

_SIG_MAGIC = b"SSHSIG"
_SIG_VERSION = 1
_SIGN_HASH = "sha512"
# PROTOCOL.sshsig defines both; ssh-keygen signs with sha512 unless given -O hashalg=sha256.
_VERIFY_HASHES = ("sha512", "sha256")
_ARMOR_WIDTH = 70  # ssh-keygen wraps at 70 columns; matching it makes our output identical.
_ED25519_KEY_BYTES = 32
_ED25519_SIG_BYTES = 64
_PRIVATE_BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----"
_PRIVATE_END = "-----END OPENSSH PRIVATE KEY-----"
_PRIVATE_MAGIC = b"openssh-key-v1\x00"
_APPROVE_HINT = "harness approve {goal} --key PRIVKEY"
_OWNER_LINE = 'principals [namespaces="..."] ssh-ed25519 <base64 key> [comment]'

_NAME = re.compile(r"[A-Za-z0-9@._:+-]{1,64}")
# Tells a key type from an options field the way OpenSSH does in practice: every key type
# it knows starts with one of these (ssh-rsa, ecdsa-sha2-nistp256, sk-ssh-ed25519@..., ...).
_KEY_TYPE_LIKE = re.compile(r"(?:ssh|ecdsa|sk|rsa|x509v3)-[A-Za-z0-9@._-]+")
_OPTION = r'[A-Za-z0-9-]+(?:="[^"]*")?'
_LEADING_OPTIONS = re.compile(rf"{_OPTION}(?:,{_OPTION})*(?=\s|$)")
_OPTION_ITEM = re.compile(r'([A-Za-z0-9-]+)(?:="([^"]*)")?')
# ssh-keygen treats these as pattern syntax (or quoting) in principals and namespaces; exact
# matching here would then disagree with `ssh-keygen -Y verify`, so they are refused.
_PATTERN_CHARS = frozenset('*?!"')


class _Problem(Exception):
    """A problem found by a helper that does not know the file; callers add where and the
    error class (InvalidInput for files people write, TrustFailure for signatures)."""

    def __init__(self, problem: str, expected: str | None = None, key: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.expected = expected
        self.key = key


class _Truncated(Exception):
    """Wire-format data ended before a field it announced."""


def _quote(text: str) -> str:
    """repr() of untrusted text, cut short so an error stays one readable line."""
    return repr(text) if len(text) <= 100 else repr(text[:100]) + "…"


def _name(text: str | bytes) -> str:
    """An identifier-like name (key type, hash) shown as is; anything else quoted."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if _NAME.fullmatch(text) else _quote(text)


# --- SSH wire format -------------------------------------------------------------------------


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class _Reader:
    """Reads SSH wire-format fields; raises _Truncated when the data runs out."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, count: int) -> bytes:
        if self._pos + count > len(self._data):
            raise _Truncated
        chunk = self._data[self._pos : self._pos + count]
        self._pos += count
        return chunk

    def uint32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def string(self) -> bytes:
        return self.take(self.uint32())

    def remaining(self) -> int:
        return len(self._data) - self._pos


def _b64decode_strict(text: str, what: str) -> bytes:
    """Decode base64, refusing stray characters and non-canonical encodings, so one key or
    signature has exactly one spelling."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Problem(f"{what} is not valid base64") from None
    if base64.b64encode(data).decode("ascii") != text:
        raise _Problem(f"{what} is not valid base64", "canonical base64")
    return data


def _ed25519_blob(raw_key: bytes) -> bytes:
    return _string(ED25519.encode()) + _string(raw_key)


def _ed25519_raw_key(blob: bytes) -> bytes:
    """The 32-byte key inside a public key blob; any other key type is refused by name."""
    reader = _Reader(blob)
    try:
        key_type = reader.string()
        if key_type != ED25519.encode():
            raise _Problem(f"key type {_name(key_type)} is not supported", ED25519)
        raw = reader.string()
    except _Truncated:
        raise _Problem("key data is truncated", f"an {ED25519} public key") from None
    if len(raw) != _ED25519_KEY_BYTES or reader.remaining():
        raise _Problem("key data is malformed", f"an {ED25519} public key of 32 bytes")
    return raw


def _decode_key_text(key_type: str, key_base64: str) -> bytes:
    """The blob for `ssh-ed25519 AAAA...`, checked for type, encoding and shape."""
    if key_type != ED25519:
        raise _Problem(f"key type {_name(key_type)} is not supported", ED25519)
    blob = _b64decode_strict(key_base64, "key")
    _ed25519_raw_key(blob)
    return blob


def public_key_line(key_blob: bytes) -> str:
    """`ssh-ed25519 AAAA...` for a blob, as in a .pub file or an owners line."""
    try:
        _ed25519_raw_key(key_blob)
    except _Problem as problem:
        raise ValueError(problem.problem) from None
    return f"{ED25519} {base64.b64encode(key_blob).decode('ascii')}"


def parse_public_key(text: str, source: str) -> bytes:
    """The blob of an OpenSSH public key line `ssh-ed25519 AAAA... [comment]`."""
    if "PRIVATE KEY" in text:
        # Say so without echoing any of it: the text is a secret.
        raise invalid(source, "", "is a private key", "the public key, from the .pub file")
    fields = text.split()
    if len(fields) < 2:
        raise invalid(source, "", "is not an OpenSSH public key", "ssh-ed25519 <base64 key>")
    try:
        return _decode_key_text(fields[0], fields[1])
    except _Problem as problem:
        raise invalid(source, "", problem.problem, problem.expected) from None


# --- owners (git allowed_signers) ------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """One line of the owners file."""

    principals: tuple[str, ...]
    key_blob: bytes  # SSH wire format: string "ssh-ed25519", string 32-byte key
    namespaces: tuple[str, ...] | None  # None: every namespace, as in allowed_signers
    line: int


def parse_owners(text: str, source: str) -> tuple[Owner, ...]:
    owners: list[Owner] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            owners.append(_parse_owner_line(line, number))
        except _Problem as problem:
            raise invalid(source, f"line {number}", problem.problem, problem.expected) from None
    return tuple(owners)


def load_owners(path: Path, source: str) -> tuple[Owner, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise invalid(
            source, "", "file does not exist", "owner lines; `harness init --owner P --key PUBKEY`"
        ) from None
    except UnicodeDecodeError:
        raise invalid(source, "", "is not UTF-8 text", _OWNER_LINE) from None
    except OSError as error:
        raise invalid(source, "", f"cannot be read: {error.strerror}") from None
    return parse_owners(text, source)


def _parse_owner_line(line: str, number: int) -> Owner:
    head, *tail = line.split(maxsplit=1)
    rest = tail[0] if tail else ""
    if _KEY_TYPE_LIKE.fullmatch(head):
        raise _Problem("the line starts with a key type, not a principal", _OWNER_LINE)
    principals = _parse_principals(head)
    if rest.startswith("AAAA"):
        raise _Problem("the key type is missing before the key", _OWNER_LINE)
    namespaces = None
    if rest and not _KEY_TYPE_LIKE.fullmatch(rest.split()[0]):
        options, rest = _take_options(rest)
        namespaces = _parse_options(options)
    fields = rest.split()
    if len(fields) < 2:
        raise _Problem("no key on the line", _OWNER_LINE)
    return Owner(principals, _decode_key_text(fields[0], fields[1]), namespaces, number)


def _take_options(rest: str) -> tuple[str, str]:
    """Split the options field off the front; a quoted value may hold blanks, and the
    comment after the key may hold anything, unbalanced quotes included."""
    match = _LEADING_OPTIONS.match(rest)
    if match is None:
        field = rest.split()[0]
        problem = "a quote is not closed" if field.count('"') % 2 else "options are malformed"
        raise _Problem(f"{problem} in {_quote(field)}", 'namespaces="harness"')
    return match.group(0), rest[match.end() :]


def _parse_principals(field: str) -> tuple[str, ...]:
    principals = tuple(field.split(","))
    if "" in principals:
        raise _Problem(f"empty principal in {_quote(field)}", "principals separated by commas")
    for principal in principals:
        if _PATTERN_CHARS.intersection(principal):
            raise _Problem(
                f"principal {_quote(principal)} is a pattern or quoted",
                "plain principals such as alice@example.com",
            )
    return principals


def _parse_options(field: str) -> tuple[str, ...]:
    """The namespaces an options field allows; every other option is refused."""
    namespaces: tuple[str, ...] | None = None
    for match in _OPTION_ITEM.finditer(field):
        name, value = match.group(1), match.group(2)
        if name.lower() != "namespaces":
            raise _Problem(f"option {_name(name)} is not supported", 'only namespaces="..."')
        if value is None or namespaces is not None:
            raise _Problem("option namespaces is malformed", 'one namespaces="..." option')
        namespaces = _parse_namespaces(value)
    assert namespaces is not None  # _LEADING_OPTIONS matched, so there is one option at least
    return namespaces


def _parse_namespaces(value: str) -> tuple[str, ...]:
    namespaces = tuple(value.split(","))
    for namespace in namespaces:
        if not namespace or _PATTERN_CHARS.intersection(namespace):
            raise _Problem(
                f"namespaces {_quote(value)} is not a plain list",
                'namespaces="harness" or a comma-separated list without patterns',
            )
    return namespaces


def principals_for_key(
    owners: Sequence[Owner], key_blob: bytes, namespace: str = NAMESPACE
) -> tuple[str, ...]:
    """Principals of every owners line listing this key for this namespace; () if none."""
    found: list[str] = []
    for owner in owners:
        allowed = owner.namespaces is None or namespace in owner.namespaces
        if owner.key_blob == key_blob and allowed:
            found.extend(p for p in owner.principals if p not in found)
    return tuple(found)


# --- statements ------------------------------------------------------------------------------

_WORD = r"[a-z][a-z0-9_]*"
_BUDGET_ITEM = rf"{_WORD}=[0-9][0-9a-z.]*"
# Every decision form, and whether it must be bound to a commit and a ledger head. A new form
# is one more entry here.
_DECISIONS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile("run"), False),
    (re.compile("ship"), True),
    (re.compile(rf"unpark {_WORD}(?::{_WORD})?"), True),
    (re.compile(rf"extend-budget {_BUDGET_ITEM}(?:,{_BUDGET_ITEM})*"), True),
    # Accepts a new owners file (by its SHA-256) for this goal: signed by a pinned owner.
    (re.compile(r"rotate-owners [0-9a-f]{64}"), False),
)
_DECISION_FORMS = (
    "run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>"
)
_VALUE_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "goal": (re.compile(r"[a-z0-9][a-z0-9-]{0,62}"), "^[a-z0-9][a-z0-9-]{0,62}$"),
    "sha256": (re.compile(r"[0-9a-f]{64}"), "64 lowercase hex digits"),
    "commit": (re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}"), "40 (or 64) lowercase hex digits"),
    "ledger": (re.compile(r"(?:0|[1-9][0-9]*):[0-9a-f]{64}"), "<seq>:<64 lowercase hex digits>"),
}
_LINE_NAMES = ("goal", "sha256", "decision", "commit", "ledger")
_BINDING = "commit <sha> and ledger <seq>:<hash> lines after the decision"


def _decision_is_bound(decision: str) -> bool:
    """Whether this decision must carry commit and ledger lines; refuses unknown forms."""
    for pattern, bound in _DECISIONS:
        if pattern.fullmatch(decision):
            _refuse_duplicate_budget_keys(decision)
            return bound
    raise _Problem(f"decision {_quote(decision)} is not valid", _DECISION_FORMS)


def _refuse_duplicate_budget_keys(decision: str) -> None:
    # `a=1,a=2` would leave the reader to pick one; an approval must mean one thing.
    if not decision.startswith("extend-budget "):
        return
    keys = [item.split("=")[0] for item in decision.removeprefix("extend-budget ").split(",")]
    if len(set(keys)) != len(keys):
        raise _Problem(f"decision {_quote(decision)} repeats a key", "each budget key once")


def _check_value(name: str, value: str) -> None:
    if name == "decision":
        _decision_is_bound(value)
        return
    pattern, expected = _VALUE_FORMS[name]
    if not pattern.fullmatch(value):
        raise _Problem(f"{name} {_quote(value)} is not valid", expected)


def _check_binding(decision: str, bound: bool) -> None:
    needs_binding = _decision_is_bound(decision)
    if needs_binding and not bound:
        raise _Problem(f"decision {decision} needs commit and ledger lines", _BINDING)
    if bound and not needs_binding:
        raise _Problem(f"decision {decision} must not carry commit and ledger lines")


@dataclass(frozen=True)
class Statement:
    """What an owner signs: one decision about one goal file's exact bytes."""

    goal: str
    sha256: str
    decision: str
    commit: str | None = None
    ledger: str | None = None

    def __post_init__(self) -> None:
        if (self.commit is None) != (self.ledger is None):
            raise invalid("statement", "ledger", "commit and ledger go together", _BINDING)
        for name, line in zip(_LINE_NAMES, self._lines()[1:], strict=False):
            try:
                _check_value(name, line.removeprefix(name + " "))
            except _Problem as problem:
                raise invalid("statement", name, problem.problem, problem.expected) from None
        try:
            _check_binding(self.decision, self.commit is not None)
        except _Problem as problem:
            raise invalid("statement", "decision", problem.problem, problem.expected) from None

    def _lines(self) -> list[str]:
        lines = [STATEMENT_HEADER, f"goal {self.goal}", f"sha256 {self.sha256}"]
        lines.append(f"decision {self.decision}")
        if self.commit is not None:
            lines += [f"commit {self.commit}", f"ledger {self.ledger}"]
        return lines

    def to_bytes(self) -> bytes:
        return "".join(line + "\n" for line in self._lines()).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes, source: str) -> Statement:
        """Strict: exactly the bytes to_bytes() would write, or InvalidInput."""
        try:
            values = _statement_values(_statement_lines(data))
        except _Problem as problem:
            raise invalid(source, problem.key, problem.problem, problem.expected) from None
        return cls(
            goal=values["goal"],
            sha256=values["sha256"],
            decision=values["decision"],
            commit=values.get("commit"),
            ledger=values.get("ledger"),
        )


def _statement_lines(data: bytes) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Problem("statement is not UTF-8 text") from None
    if not text.endswith("\n"):
        raise _Problem("statement does not end with a newline", "a newline after every line")
    return text[:-1].split("\n")


def _statement_values(lines: list[str]) -> dict[str, str]:
    if lines[0] != STATEMENT_HEADER:
        raise _Problem(f"first line is {_quote(lines[0])}", repr(STATEMENT_HEADER), "line 1")
    if len(lines) not in (4, 6):
        raise _Problem(f"statement has {len(lines)} lines", f"4, or 6 with {_BINDING}")
    values: dict[str, str] = {}
    for number, (name, line) in enumerate(zip(_LINE_NAMES, lines[1:], strict=False), start=2):
        key = f"line {number}"
        if not line.startswith(name + " "):
            raise _Problem(f"line is {_quote(line)}", f"{name} <value>", key)
        values[name] = line[len(name) + 1 :]
        try:
            _check_value(name, values[name])
        except _Problem as problem:
            raise _Problem(problem.problem, problem.expected, key) from None
    try:
        _check_binding(values["decision"], "commit" in values)
    except _Problem as problem:
        raise _Problem(problem.problem, problem.expected, "line 4") from None
    return values


# --- SSHSIG ----------------------------------------------------------------------------------


def _signed_data(message: bytes, namespace: bytes, hash_name: str) -> bytes:
    """The bytes an SSHSIG signature covers (PROTOCOL.sshsig); reserved is always empty."""
    digest = hashlib.new(hash_name, message).digest()
    parts = (_string(namespace), _string(b""), _string(hash_name.encode()), _string(digest))
    return _SIG_MAGIC + b"".join(parts)


def sign(
    message: bytes,
    private_key_path: Path,
    passphrase: bytes | None = None,
    namespace: str = NAMESPACE,
) -> str:
    """An armored SSHSIG signature, byte for byte what `ssh-keygen -Y sign` writes."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = _load_ed25519_private_key(private_key_path, passphrase)
    public_raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = key.sign(_signed_data(message, namespace.encode(), _SIGN_HASH))
    blob = _SIG_MAGIC + struct.pack(">I", _SIG_VERSION)
    blob += _string(_ed25519_blob(public_raw)) + _string(namespace.encode()) + _string(b"")
    blob += _string(_SIGN_HASH.encode())
    blob += _string(_string(ED25519.encode()) + _string(signature))
    return _armor(blob)


def _armor(blob: bytes) -> str:
    text = base64.b64encode(blob).decode("ascii")
    body = [text[i : i + _ARMOR_WIDTH] for i in range(0, len(text), _ARMOR_WIDTH)]
    return "\n".join([ARMOR_BEGIN, *body, ARMOR_END]) + "\n"


def _load_ed25519_private_key(path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    source = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise invalid(source, "", "private key file does not exist") from None
    except OSError as error:
        raise invalid(source, "", f"private key cannot be read: {error.strerror}") from None
    key_type, encrypted = _peek_private_key(data, source)
    if key_type != ED25519:
        raise invalid(source, "", f"key type {_name(key_type)} is not supported", ED25519)
    if encrypted and not passphrase:  # an empty HARNESS_KEY_PASSPHRASE counts as unset
        raise invalid(
            source, "", "private key is encrypted", "its passphrase in HARNESS_KEY_PASSPHRASE"
        )
    key = _decrypt_private_key(data, passphrase if encrypted else None, source)
    if not isinstance(key, Ed25519PrivateKey):
        raise invalid(source, "", "private key is not an ed25519 key", ED25519)
    return key


def _decrypt_private_key(data: bytes, passphrase: bytes | None, source: str) -> object:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    try:
        return load_ssh_private_key(data, passphrase)
    except UnsupportedAlgorithm as error:
        # cryptography needs the optional bcrypt package for passphrase-protected keys.
        raise invalid(
            source,
            "",
            f"cannot decrypt the private key ({error})",
            "the Python package bcrypt installed, or a key without a passphrase",
        ) from None
    except ValueError:
        problem = "cannot decrypt the private key" if passphrase else "private key is malformed"
        expected = "the right passphrase in HARNESS_KEY_PASSPHRASE" if passphrase else None
        raise invalid(source, "", problem, expected) from None


def _peek_private_key(data: bytes, source: str) -> tuple[str, bool]:
    """(key type, encrypted?) from the clear header of an openssh-key-v1 file.

    Read here rather than by cryptography because the header names the key type even when
    the key is encrypted or of a kind cryptography cannot load (sk-ssh-ed25519@openssh.com),
    so the user is told which key type was refused.
    """
    text = data.decode("ascii", "replace").strip()
    if _KEY_TYPE_LIKE.match(text):
        raise invalid(source, "", "is a public key", "the private key file, not the .pub file")
    not_openssh = invalid(source, "", "is not an OpenSSH private key", "ssh-keygen -t ed25519")
    if not (text.startswith(_PRIVATE_BEGIN) and text.endswith(_PRIVATE_END)):
        raise not_openssh
    body = "".join(text[len(_PRIVATE_BEGIN) : -len(_PRIVATE_END)].split())
    try:
        reader = _Reader(base64.b64decode(body, validate=True))
        if reader.take(len(_PRIVATE_MAGIC)) != _PRIVATE_MAGIC:
            raise not_openssh
        cipher, _kdf, _kdf_options = reader.string(), reader.string(), reader.string()
        reader.uint32()  # number of keys; cryptography refuses files with more than one
        key_type = _Reader(reader.string()).string()
    except (binascii.Error, _Truncated):
        raise not_openssh from None
    return key_type.decode("utf-8", "replace"), cipher != b"none"


@dataclass(frozen=True)
class _SshSig:
    public_key: bytes
    namespace: bytes
    reserved: bytes
    hash_name: bytes
    signature: bytes


def verify(message: bytes, armored: str, namespace: str = NAMESPACE) -> bytes:
    """The signer's public key blob if `armored` is a valid SSHSIG of `message`."""
    try:
        parsed = _parse_sshsig(_dearmor(armored))
        _check_sshsig_header(parsed, namespace)
        raw_key = _ed25519_raw_key(parsed.public_key)
        signature = _ed25519_signature(parsed.signature)
        signed = _signed_data(message, parsed.namespace, parsed.hash_name.decode())
        _check_ed25519(raw_key, signature, signed)
    except _Problem as problem:
        raise TrustFailure(located("signature", "", problem.problem, problem.expected)) from None
    return parsed.public_key


def _dearmor(armored: str) -> bytes:
    # One final newline is how a .sig file or an approval record ends; nothing else may follow.
    lines = armored.removesuffix("\n").split("\n")
    if lines[0] != ARMOR_BEGIN:
        raise _Problem(f"armor does not start with {ARMOR_BEGIN}")
    if ARMOR_END not in lines:
        raise _Problem(f"armor has no {ARMOR_END} line")
    if lines.index(ARMOR_END) != len(lines) - 1:
        raise _Problem(f"text follows the {ARMOR_END} line")
    return _b64decode_strict("".join(lines[1:-1]), "armored signature")


def _parse_sshsig(blob: bytes) -> _SshSig:
    reader = _Reader(blob)
    try:
        if reader.take(len(_SIG_MAGIC)) != _SIG_MAGIC:
            raise _Problem("blob does not start with SSHSIG", "an OpenSSH SSHSIG signature")
        version = reader.uint32()
        if version != _SIG_VERSION:
            raise _Problem(f"version {version} is not supported", f"version {_SIG_VERSION}")
        fields = [reader.string() for _ in range(5)]
    except _Truncated:
        raise _Problem("blob is truncated") from None
    if reader.remaining():
        raise _Problem(f"blob has {reader.remaining()} bytes after the signature")
    return _SshSig(*fields)


def _check_sshsig_header(parsed: _SshSig, namespace: str) -> None:
    if parsed.namespace != namespace.encode():
        shown = _quote(parsed.namespace.decode("utf-8", "replace"))
        raise _Problem(f"namespace is {shown}", repr(namespace))
    if parsed.reserved:
        # ssh-keygen never writes it; refusing it keeps one spelling per signature.
        raise _Problem("reserved field is not empty")
    if parsed.hash_name.decode("utf-8", "replace") not in _VERIFY_HASHES:
        hash_shown = _name(parsed.hash_name)
        raise _Problem(f"hash algorithm {hash_shown} is not supported", " or ".join(_VERIFY_HASHES))


def _ed25519_signature(field: bytes) -> bytes:
    reader = _Reader(field)
    try:
        sig_type = reader.string()
        if sig_type != ED25519.encode():
            raise _Problem(f"signature type {_name(sig_type)} does not match key type {ED25519}")
        raw = reader.string()
    except _Truncated:
        raise _Problem("signature field is truncated") from None
    if len(raw) != _ED25519_SIG_BYTES or reader.remaining():
        raise _Problem("signature field is malformed", "a 64-byte ed25519 signature")
    return raw


def _check_ed25519(raw_key: bytes, signature: bytes, signed: bytes) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(signature, signed)
    except (InvalidSignature, ValueError):
        raise _Problem("does not verify: the signed text or the signature was changed") from None


# --- approval files --------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedRecord:
    statement: Statement
    statement_bytes: bytes
    armored: str
    index: int  # 1-based position in the file


@dataclass(frozen=True)
class Verdict:
    record: SignedRecord
    principals: tuple[str, ...]  # the owner principals whose key signed it


def parse_approval_file(text: str, source: str) -> tuple[SignedRecord, ...]:
    if not text:
        return ()
    if not text.endswith("\n"):
        raise invalid(source, "", "does not end with a newline", f"{ARMOR_END} then a newline")
    chunks = text[:-1].split("\n\n")
    return tuple(_parse_record(chunk, index, source) for index, chunk in enumerate(chunks, 1))


def load_approval_file(path: Path, source: str) -> tuple[SignedRecord, ...]:
    """The records of an approval file; () when it does not exist yet."""
    return parse_approval_file(_read_approval_text(path, source), source)


def _read_approval_text(path: Path, source: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise invalid(source, "", "is not UTF-8 text") from None


def _parse_record(chunk: str, index: int, source: str) -> SignedRecord:
    where = f"record {index}"
    lines = chunk.split("\n")
    if not lines[0]:
        raise invalid(source, where, "starts with a blank line", "one blank line between records")
    if ARMOR_BEGIN not in lines:
        layout = f"the statement lines, then {ARMOR_BEGIN}, and one blank line between records"
        raise invalid(source, where, f"has no {ARMOR_BEGIN} line", layout)
    if lines.count(ARMOR_BEGIN) > 1 or lines.count(ARMOR_END) > 1:
        raise invalid(source, where, "has two signature blocks", "one blank line between records")
    if lines[-1] != ARMOR_END:
        raise invalid(source, where, f"does not end with {ARMOR_END}")
    begin = lines.index(ARMOR_BEGIN)
    statement_bytes = "".join(line + "\n" for line in lines[:begin]).encode("utf-8")
    statement = Statement.parse(statement_bytes, f"{source}: {where}")
    armored = "".join(line + "\n" for line in lines[begin:])
    return SignedRecord(statement, statement_bytes, armored, index)


def format_record(statement: Statement, armored: str) -> str:
    """A record's text: the statement's lines then the armored block, ending in a newline."""
    return statement.to_bytes().decode("utf-8") + armored.removesuffix("\n") + "\n"


def append_record(path: Path, statement: Statement, armored: str) -> None:
    """Rewrite the approval file atomically with one more record at the end."""
    source = str(path)
    existing = _read_approval_text(path, source)
    before = parse_approval_file(existing, source)
    separator = "\n" if existing else ""
    text = existing + separator + format_record(statement, armored)
    # Re-read what would be written so a malformed armored block never reaches the file.
    after = parse_approval_file(text, source)
    if len(after) != len(before) + 1 or after[-1].statement != statement:
        raise invalid(source, "", "the new record does not read back as one record")
    atomic_write(path, text.encode("utf-8"))


def verify_record(record: SignedRecord, owners: Sequence[Owner], source: str) -> Verdict:
    where = f"record {record.index}"
    try:
        key_blob = verify(record.statement_bytes, record.armored)
    except TrustFailure as failure:
        raise TrustFailure(located(source, where, failure.message)) from None
    principals = principals_for_key(owners, key_blob)
    if not principals:
        problem = f"signed by a key that is not in {OWNERS_FILE} ({public_key_line(key_blob)})"
        raise TrustFailure(located(source, where, problem))
    return Verdict(record, principals)


def find_run_approval(
    records: Sequence[SignedRecord],
    owners: Sequence[Owner],
    goal_id: str,
    sha256: str,
    source: str,
) -> Verdict:
    """The newest owner-signed run decision for exactly these goal file bytes."""
    failures: list[TrustFailure] = []
    for record in reversed(records):
        statement = record.statement
        if (statement.goal, statement.sha256, statement.decision) == (goal_id, sha256, "run"):
            try:
                return verify_record(record, owners, source)
            except TrustFailure as failure:
                failures.append(failure)
    if failures:
        raise failures[0]
    raise TrustFailure(located(source, "", _why_not_approved(records, goal_id, sha256)))


def _why_not_approved(records: Sequence[SignedRecord], goal_id: str, sha256: str) -> str:
    """The most helpful reason there is no usable run approval, signatures aside."""
    hint = _APPROVE_HINT.format(goal=goal_id)
    runs = [r for r in records if (r.statement.goal, r.statement.decision) == (goal_id, "run")]
    if runs:
        approved = runs[-1].statement.sha256
        return (
            f"the goal file changed after it was approved (approved sha256 {approved[:12]}…, "
            f"file is {sha256[:12]}…): re-approve with `{hint}`"
        )
    others = [r for r in records if r.statement.goal != goal_id]
    if others:
        newest = others[-1]
        return (
            f"goal {goal_id} is not approved: record {newest.index} is for goal "
            f"{newest.statement.goal}, not {goal_id}; run `{hint}`"
        )
    return f"goal {goal_id} is not approved: run `{hint}`"
