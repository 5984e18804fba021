"""SSHSIG signatures (PROTOCOL.sshsig in OpenSSH), made and checked with ed25519 keys.

`sign` writes byte for byte what `ssh-keygen -Y sign` writes, and `verify` accepts what it
writes, so an owner can check every approval with `ssh-keygen -Y verify` and never has to
trust this verifier alone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import TrustFailure, invalid, located
from harness.trust.problem import Problem, quote, shown_name
from harness.trust.sshwire import (
    ED25519,
    KEY_TYPE_LIKE,
    Reader,
    Truncated,
    b64decode_strict,
    ed25519_blob,
    ed25519_raw_key,
    ssh_string,
)

# cryptography is imported where a key is used: reading and parsing approvals (all a run
# does for a goal resting at a gate) must not pay its import time.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


NAMESPACE = "harness"
# A passphrase, or a function that asks for it (called only for an encrypted key).
Passphrase = bytes | None | Callable[[], bytes | None]
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"

_SIG_MAGIC = b"SSHSIG"
_SIG_VERSION = 1
_SIGN_HASH = "sha512"
# PROTOCOL.sshsig defines both; ssh-keygen signs with sha512 unless given -O hashalg=sha256.
_VERIFY_HASHES = ("sha512", "sha256")
_ARMOR_WIDTH = 70  # ssh-keygen wraps at 70 columns; matching it makes our output identical.
_ED25519_SIG_BYTES = 64
_PRIVATE_BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----"
_PRIVATE_END = "-----END OPENSSH PRIVATE KEY-----"
_PRIVATE_MAGIC = b"openssh-key-v1\x00"


def _signed_data(message: bytes, namespace: bytes, hash_name: str) -> bytes:
    """The bytes an SSHSIG signature covers (PROTOCOL.sshsig); reserved is always empty."""
    digest = hashlib.new(hash_name, message).digest()
    parts = (namespace, b"", hash_name.encode(), digest)
    return _SIG_MAGIC + b"".join(ssh_string(part) for part in parts)


def sign(
    message: bytes,
    private_key_path: Path,
    passphrase: Passphrase = None,
    namespace: str = NAMESPACE,
) -> str:
    """An armored SSHSIG signature, byte for byte what `ssh-keygen -Y sign` writes."""
    return sign_with(load_private_key(private_key_path, passphrase), message, namespace)


def sign_with(key: Ed25519PrivateKey, message: bytes, namespace: str = NAMESPACE) -> str:
    """`sign` with a key already loaded (a runner signs every checkpoint with one key)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public_raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = key.sign(_signed_data(message, namespace.encode(), _SIGN_HASH))
    blob = _SIG_MAGIC + struct.pack(">I", _SIG_VERSION)
    blob += ssh_string(ed25519_blob(public_raw)) + ssh_string(namespace.encode()) + ssh_string(b"")
    blob += ssh_string(_SIGN_HASH.encode())
    blob += ssh_string(ssh_string(ED25519.encode()) + ssh_string(signature))
    return _armor(blob)


def _armor(blob: bytes) -> str:
    text = base64.b64encode(blob).decode("ascii")
    body = [text[i : i + _ARMOR_WIDTH] for i in range(0, len(text), _ARMOR_WIDTH)]
    return "\n".join([ARMOR_BEGIN, *body, ARMOR_END]) + "\n"


def load_private_key(path: Path, given: Passphrase = None) -> Ed25519PrivateKey:
    """An ed25519 private key from an OpenSSH key file, refused by name otherwise."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    source = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise invalid(source, "", "private key file does not exist") from None
    except OSError as error:
        raise invalid(source, "", f"private key cannot be read: {error.strerror}") from None
    key_type, encrypted, _ = _peek_private_key(data, source)
    if key_type != ED25519:
        raise invalid(source, "", f"key type {shown_name(key_type)} is not supported", ED25519)
    # Asked for only when the key needs it: a prompt for a key without a passphrase would
    # be a question with no meaning.
    passphrase = (given() if encrypted else None) if callable(given) else given
    if encrypted and not passphrase:  # an empty HARNESS_KEY_PASSPHRASE counts as unset
        raise invalid(
            source,
            "",
            "private key is encrypted",
            "its passphrase in HARNESS_KEY_PASSPHRASE, or typed at a terminal",
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


def _peek_private_key(data: bytes, source: str) -> tuple[str, bool, bytes]:
    """(key type, encrypted?, public key blob) from the clear header of an openssh-key-v1 file.

    Read here rather than by cryptography because the header names the key type even when
    the key is encrypted or of a kind cryptography cannot load (sk-ssh-ed25519@openssh.com),
    so the user is told which key type was refused.
    """
    text = data.decode("ascii", "replace").strip()
    if KEY_TYPE_LIKE.match(text):
        raise invalid(source, "", "is a public key", "the private key file, not the .pub file")
    not_openssh = invalid(source, "", "is not an OpenSSH private key", "ssh-keygen -t ed25519")
    if not (text.startswith(_PRIVATE_BEGIN) and text.endswith(_PRIVATE_END)):
        raise not_openssh
    body = "".join(text[len(_PRIVATE_BEGIN) : -len(_PRIVATE_END)].split())
    try:
        reader = Reader(base64.b64decode(body, validate=True))
        if reader.take(len(_PRIVATE_MAGIC)) != _PRIVATE_MAGIC:
            raise not_openssh
        cipher, _kdf, _kdf_options = reader.string(), reader.string(), reader.string()
        reader.uint32()  # number of keys; cryptography refuses files with more than one
        public_blob = reader.string()
        key_type = Reader(public_blob).string()
    except (binascii.Error, Truncated):
        raise not_openssh from None
    return key_type.decode("utf-8", "replace"), cipher != b"none", public_blob


def private_key_public_blob(data: bytes, source: str) -> bytes:
    """The public key blob an OpenSSH private key file carries in the clear: whose key it
    is, known without decrypting it or importing cryptography."""
    key_type, _, blob = _peek_private_key(data, source)
    if key_type != ED25519:
        raise invalid(source, "", f"key type {shown_name(key_type)} is not supported", ED25519)
    return blob


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
        raw_key = ed25519_raw_key(parsed.public_key)
        signature = _ed25519_signature(parsed.signature)
        signed = _signed_data(message, parsed.namespace, parsed.hash_name.decode())
        _check_ed25519(raw_key, signature, signed)
    except Problem as problem:
        raise TrustFailure(located("signature", "", problem.problem, problem.expected)) from None
    return parsed.public_key


def signer_blob(armored: str) -> bytes | None:
    """The public key blob an SSHSIG block names, read without checking the signature (to
    tell whose a signature claims to be); None when the block does not parse."""
    try:
        return _parse_sshsig(_dearmor(armored)).public_key
    except Problem:
        return None


def _dearmor(armored: str) -> bytes:
    # One final newline is how a .sig file or an approval record ends; nothing else may follow.
    lines = armored.removesuffix("\n").split("\n")
    if lines[0] != ARMOR_BEGIN:
        raise Problem(f"armor does not start with {ARMOR_BEGIN}")
    if ARMOR_END not in lines:
        raise Problem(f"armor has no {ARMOR_END} line")
    if lines.index(ARMOR_END) != len(lines) - 1:
        raise Problem(f"text follows the {ARMOR_END} line")
    return b64decode_strict("".join(lines[1:-1]), "armored signature")


def _parse_sshsig(blob: bytes) -> _SshSig:
    reader = Reader(blob)
    try:
        if reader.take(len(_SIG_MAGIC)) != _SIG_MAGIC:
            raise Problem("blob does not start with SSHSIG", "an OpenSSH SSHSIG signature")
        version = reader.uint32()
        if version != _SIG_VERSION:
            raise Problem(f"version {version} is not supported", f"version {_SIG_VERSION}")
        fields = [reader.string() for _ in range(5)]
    except Truncated:
        raise Problem("blob is truncated") from None
    if reader.remaining():
        raise Problem(f"blob has {reader.remaining()} bytes after the signature")
    return _SshSig(*fields)


def _check_sshsig_header(parsed: _SshSig, namespace: str) -> None:
    if parsed.namespace != namespace.encode():
        shown = quote(parsed.namespace.decode("utf-8", "replace"))
        raise Problem(f"namespace is {shown}", repr(namespace))
    if parsed.reserved:
        # ssh-keygen never writes it; refusing it keeps one spelling per signature.
        raise Problem("reserved field is not empty")
    if parsed.hash_name.decode("utf-8", "replace") not in _VERIFY_HASHES:
        hash_shown = shown_name(parsed.hash_name)
        raise Problem(f"hash algorithm {hash_shown} is not supported", " or ".join(_VERIFY_HASHES))


def _ed25519_signature(field: bytes) -> bytes:
    reader = Reader(field)
    try:
        sig_type = reader.string()
        if sig_type != ED25519.encode():
            raise Problem(
                f"signature type {shown_name(sig_type)} does not match key type {ED25519}"
            )
        raw = reader.string()
    except Truncated:
        raise Problem("signature field is truncated") from None
    if len(raw) != _ED25519_SIG_BYTES or reader.remaining():
        raise Problem("signature field is malformed", "a 64-byte ed25519 signature")
    return raw


def _check_ed25519(raw_key: bytes, signature: bytes, signed: bytes) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(signature, signed)
    except (InvalidSignature, ValueError):
        raise Problem("does not verify: the signed text or the signature was changed") from None
