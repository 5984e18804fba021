"""The SSH wire format and ed25519 public keys, as OpenSSH writes them.

Strings are a 4-byte big-endian length then the bytes (RFC 4251); a public key blob is the
string "ssh-ed25519" then the string of the 32-byte key. Only ed25519 is accepted, and any
other key type is refused by name.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

from harness.errors import invalid
from harness.trust.problem import Problem, shown_name

ED25519 = "ssh-ed25519"
# Tells a key type from an options field the way OpenSSH does in practice: every key type
# it knows starts with one of these (ssh-rsa, ecdsa-sha2-nistp256, sk-ssh-ed25519@..., ...).
KEY_TYPE_LIKE = re.compile(r"(?:ssh|ecdsa|sk|rsa|x509v3)-[A-Za-z0-9@._-]+")
_ED25519_KEY_BYTES = 32


class Truncated(Exception):
    """Wire-format data ended before a field it announced."""


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class Reader:
    """Reads SSH wire-format fields; raises Truncated when the data runs out."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, count: int) -> bytes:
        if self._pos + count > len(self._data):
            raise Truncated
        chunk = self._data[self._pos : self._pos + count]
        self._pos += count
        return chunk

    def uint32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def string(self) -> bytes:
        return self.take(self.uint32())

    def remaining(self) -> int:
        return len(self._data) - self._pos


def b64decode_strict(text: str, what: str) -> bytes:
    """Decode base64, refusing stray characters and non-canonical encodings, so one key or
    signature has exactly one spelling."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Problem(f"{what} is not valid base64") from None
    if base64.b64encode(data).decode("ascii") != text:
        raise Problem(f"{what} is not valid base64", "canonical base64")
    return data


def ed25519_blob(raw_key: bytes) -> bytes:
    return ssh_string(ED25519.encode()) + ssh_string(raw_key)


def ed25519_raw_key(blob: bytes) -> bytes:
    """The 32-byte key inside a public key blob; any other key type is refused by name."""
    reader = Reader(blob)
    try:
        key_type = reader.string()
        if key_type != ED25519.encode():
            raise Problem(f"key type {shown_name(key_type)} is not supported", ED25519)
        raw = reader.string()
    except Truncated:
        raise Problem("key data is truncated", f"an {ED25519} public key") from None
    if len(raw) != _ED25519_KEY_BYTES or reader.remaining():
        raise Problem("key data is malformed", f"an {ED25519} public key of 32 bytes")
    return raw


def decode_key_text(key_type: str, key_base64: str) -> bytes:
    """The blob for `ssh-ed25519 AAAA...`, checked for type, encoding and shape."""
    if key_type != ED25519:
        raise Problem(f"key type {shown_name(key_type)} is not supported", ED25519)
    blob = b64decode_strict(key_base64, "key")
    ed25519_raw_key(blob)
    return blob


def public_key_line(key_blob: bytes) -> str:
    """`ssh-ed25519 AAAA...` for a blob, as in a .pub file or an owners line."""
    try:
        ed25519_raw_key(key_blob)
    except Problem as problem:
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
        return decode_key_text(fields[0], fields[1])
    except Problem as problem:
        raise invalid(source, "", problem.problem, problem.expected) from None
