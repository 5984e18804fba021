"""OpenSSH public key lines and blobs, checked against ssh-keygen's .pub files."""

from __future__ import annotations

import base64

import pytest

from harness.errors import InvalidInput
from harness.trust.sshwire import parse_public_key, public_key_line
from tests.trust.signing import ECDSA_B64, Key


def test_public_key_line_round_trips_ssh_keygen_pub_file(keys: dict[str, Key]) -> None:
    alice = keys["alice"]
    blob = parse_public_key(alice.pub, "alice.pub")
    assert blob == alice.blob
    assert public_key_line(blob) == " ".join(alice.pub.split()[:2])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f"ecdsa-sha2-nistp256 {ECDSA_B64} t\n",
            "key.pub: key type ecdsa-sha2-nistp256 is not supported (expected ssh-ed25519)",
        ),
        (
            "ssh-ed25519\n",
            "key.pub: is not an OpenSSH public key (expected ssh-ed25519 <base64 key>)",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n",
            "key.pub: is a private key (expected the public key, from the .pub file)",
        ),
    ],
)
def test_parse_public_key_refuses(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_public_key(text, "key.pub")
    assert str(raised.value) == message


def test_public_key_line_refuses_a_non_ed25519_blob() -> None:
    with pytest.raises(ValueError, match="ecdsa-sha2-nistp256"):
        public_key_line(base64.b64decode(ECDSA_B64))
