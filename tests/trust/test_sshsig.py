"""SSHSIG sign and verify, checked against real ssh-keygen."""

from __future__ import annotations

import base64
import importlib.util
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.trust.owners import parse_owners
from harness.trust.sshsig import sign, verify
from harness.trust.sshwire import public_key_line
from tests.trust.signing import (
    ECDSA_B64,
    ED_B64,
    NOT_VERIFIED,
    OWNERS,
    RUN,
    SHIP,
    SSH_KEYGEN,
    Key,
    b64,
    ssh_keygen,
    wire,
)

MESSAGE = b"harness-approval v1\ngoal fix-login\n"


def test_sign_verify_round_trip_returns_signer_key(keys: dict[str, Key]) -> None:
    armored = sign(MESSAGE, keys["alice"].path)
    assert verify(MESSAGE, armored) == keys["alice"].blob
    assert verify(MESSAGE, armored.rstrip("\n")) == keys["alice"].blob


def test_sign_output_is_byte_for_byte_ssh_keygen(keys: dict[str, Key], tmp_path: Path) -> None:
    # ed25519 signatures are deterministic, so both signers must write the very same file.
    (tmp_path / "statement").write_bytes(MESSAGE)
    done = ssh_keygen(
        "-Y", "sign", "-f", str(keys["alice"].path), "-n", "harness", "statement", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert sign(MESSAGE, keys["alice"].path) == (tmp_path / "statement.sig").read_text()


@pytest.mark.parametrize("hashalg", ["sha512", "sha256"])
def test_verify_accepts_ssh_keygen_signature(
    keys: dict[str, Key], tmp_path: Path, hashalg: str
) -> None:
    (tmp_path / "statement").write_bytes(RUN.to_bytes())
    key = str(keys["carol"].path)
    done = ssh_keygen(
        "-Y",
        "sign",
        "-f",
        key,
        "-n",
        "harness",
        "-O",
        f"hashalg={hashalg}",
        "statement",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    armored = (tmp_path / "statement.sig").read_text()
    assert verify(RUN.to_bytes(), armored) == keys["carol"].blob
    with pytest.raises(TrustFailure):
        verify(SHIP.to_bytes(), armored)


def test_ssh_keygen_verifies_our_signature_against_our_owners_file(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    owners_text = (
        f'alice@example.com namespaces="harness" {public_key_line(keys["alice"].blob)}\n'
        f"bob@example.com {public_key_line(keys['bob'].blob)}\n"
    )
    (tmp_path / "owners").write_text(owners_text)
    assert parse_owners(owners_text, OWNERS)[0].principals == ("alice@example.com",)
    (tmp_path / "statement").write_bytes(RUN.to_bytes())
    (tmp_path / "statement.sig").write_text(sign(RUN.to_bytes(), keys["alice"].path))

    def ssh_verify(principal: str, namespace: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                SSH_KEYGEN,
                "-Y",
                "verify",
                "-f",
                "owners",
                "-I",
                principal,
                "-n",
                namespace,
                "-s",
                "statement.sig",
            ],
            cwd=tmp_path,
            input=RUN.to_bytes().decode(),
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )

    good = ssh_verify("alice@example.com", "harness")
    assert good.returncode == 0, good.stderr
    assert "Good" in good.stdout
    assert ssh_verify("bob@example.com", "harness").returncode != 0
    assert ssh_verify("alice@example.com", "git").returncode != 0


def test_verify_refuses_ecdsa_signature_by_name(keys: dict[str, Key], tmp_path: Path) -> None:
    (tmp_path / "statement").write_bytes(MESSAGE)
    done = ssh_keygen(
        "-Y", "sign", "-f", str(keys["ecdsa"].path), "-n", "harness", "statement", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(TrustFailure) as raised:
        verify(MESSAGE, (tmp_path / "statement.sig").read_text())
    assert str(raised.value) == (
        "signature: key type ecdsa-sha2-nistp256 is not supported (expected ssh-ed25519)"
    )


def test_verify_refuses_ssh_keygen_signature_in_another_namespace(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    (tmp_path / "statement").write_bytes(MESSAGE)
    done = ssh_keygen(
        "-Y", "sign", "-f", str(keys["alice"].path), "-n", "git", "statement", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    with pytest.raises(TrustFailure) as raised:
        verify(MESSAGE, (tmp_path / "statement.sig").read_text())
    assert str(raised.value) == "signature: namespace is 'git' (expected 'harness')"


@dataclass
class SigFields:
    """An SSHSIG blob split into its fields, so a test can change exactly one."""

    magic: bytes
    version: int
    public_key: bytes
    namespace: bytes
    reserved: bytes
    hash_name: bytes
    signature: bytes
    trailing: bytes = b""

    @classmethod
    def of(cls, armored: str) -> SigFields:
        blob = base64.b64decode("".join(armored.strip().split("\n")[1:-1]))
        pos, fields = 10, []
        for _ in range(5):
            (size,) = struct.unpack(">I", blob[pos : pos + 4])
            fields.append(blob[pos + 4 : pos + 4 + size])
            pos += 4 + size
        (version,) = struct.unpack(">I", blob[6:10])
        public_key, namespace, reserved, hash_name, signature = fields
        return cls(
            blob[:6], version, public_key, namespace, reserved, hash_name, signature, blob[pos:]
        )

    def blob(self) -> bytes:
        parts = (self.public_key, self.namespace, self.reserved, self.hash_name, self.signature)
        head = self.magic + struct.pack(">I", self.version)
        return head + b"".join(wire(p) for p in parts) + self.trailing


def armor(blob: bytes) -> str:
    text = b64(blob)
    body = [text[i : i + 70] for i in range(0, len(text), 70)]
    return "\n".join(["-----BEGIN SSH SIGNATURE-----", *body, "-----END SSH SIGNATURE-----"]) + "\n"


def changed(**changes: Any) -> Callable[[str, dict[str, Key]], str]:
    def change(armored: str, keys: dict[str, Key]) -> str:
        fields = SigFields.of(armored)
        for name, value in changes.items():
            setattr(fields, name, value(keys) if callable(value) else value)
        return armor(fields.blob())

    return change


def flipped_signature(armored: str, keys: dict[str, Key]) -> str:
    fields = SigFields.of(armored)
    raw = bytearray(fields.signature)
    raw[-1] ^= 1
    fields.signature = bytes(raw)
    return armor(fields.blob())


Mutation = Callable[[str, dict[str, Key]], str]
BAD_SIGNATURES = [
    ("message tampered", lambda a, k: a, MESSAGE + b"!", NOT_VERIFIED),
    ("flipped signature bit", flipped_signature, MESSAGE, NOT_VERIFIED),
    ("signer key swapped", changed(public_key=lambda k: k["bob"].blob), MESSAGE, NOT_VERIFIED),
    (
        "no armor",
        lambda a, k: a.replace("-----BEGIN SSH SIGNATURE-----\n", ""),
        MESSAGE,
        "signature: armor does not start with -----BEGIN SSH SIGNATURE-----",
    ),
    (
        "no end line",
        lambda a, k: a.replace("-----END SSH SIGNATURE-----\n", ""),
        MESSAGE,
        "signature: armor has no -----END SSH SIGNATURE----- line",
    ),
    (
        "garbage after armor",
        lambda a, k: a + "extra\n",
        MESSAGE,
        "signature: text follows the -----END SSH SIGNATURE----- line",
    ),
    (
        "garbage in base64",
        lambda a, k: a.replace("U1NIU0lH", "U1NIU0l*", 1),
        MESSAGE,
        "signature: armored signature is not valid base64",
    ),
    (
        "truncated",
        lambda a, k: armor(SigFields.of(a).blob()[:-7]),
        MESSAGE,
        "signature: blob is truncated",
    ),
    (
        "trailing bytes",
        changed(trailing=b"\x00"),
        MESSAGE,
        "signature: blob has 1 bytes after the signature",
    ),
    (
        "non-canonical base64",
        lambda a, k: changed(trailing=b"\x00")(a, k).replace("A==\n", "B==\n"),
        MESSAGE,
        "signature: armored signature is not valid base64 (expected canonical base64)",
    ),
    (
        "bytes after the ed25519 signature",
        changed(signature=wire(b"ssh-ed25519") + wire(bytes(64)) + b"x"),
        MESSAGE,
        "signature: signature field is malformed (expected a 64-byte ed25519 signature)",
    ),
    (
        "wrong magic",
        changed(magic=b"SSHSIX"),
        MESSAGE,
        "signature: blob does not start with SSHSIG (expected an OpenSSH SSHSIG signature)",
    ),
    (
        "wrong version",
        changed(version=2),
        MESSAGE,
        "signature: version 2 is not supported (expected version 1)",
    ),
    (
        "reserved used",
        changed(reserved=b"x"),
        MESSAGE,
        "signature: reserved field is not empty",
    ),
    (
        "unsupported hash",
        changed(hash_name=b"md5"),
        MESSAGE,
        "signature: hash algorithm md5 is not supported (expected sha512 or sha256)",
    ),
    (
        "signature type mismatch",
        changed(signature=wire(b"rsa-sha2-512") + wire(bytes(64))),
        MESSAGE,
        "signature: signature type rsa-sha2-512 does not match key type ssh-ed25519",
    ),
    (
        "short signature",
        changed(signature=wire(b"ssh-ed25519") + wire(bytes(63))),
        MESSAGE,
        "signature: signature field is malformed (expected a 64-byte ed25519 signature)",
    ),
    (
        "non-ed25519 key",
        changed(public_key=base64.b64decode(ECDSA_B64)),
        MESSAGE,
        "signature: key type ecdsa-sha2-nistp256 is not supported (expected ssh-ed25519)",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "message", "expected"),
    [case[1:] for case in BAD_SIGNATURES],
    ids=[str(case[0]) for case in BAD_SIGNATURES],
)
def test_verify_refuses_bad_signature(
    keys: dict[str, Key], mutate: Mutation, message: bytes, expected: str
) -> None:
    armored = mutate(sign(MESSAGE, keys["alice"].path), keys)
    with pytest.raises(TrustFailure) as raised:
        verify(message, armored)
    assert str(raised.value) == expected


def test_verify_refuses_signature_for_another_namespace(keys: dict[str, Key]) -> None:
    armored = sign(MESSAGE, keys["alice"].path, namespace="file")
    assert verify(MESSAGE, armored, namespace="file") == keys["alice"].blob
    with pytest.raises(TrustFailure) as raised:
        verify(MESSAGE, armored)
    assert str(raised.value) == "signature: namespace is 'file' (expected 'harness')"


def test_sign_refuses_ecdsa_key_by_name(keys: dict[str, Key]) -> None:
    with pytest.raises(InvalidInput) as raised:
        sign(MESSAGE, keys["ecdsa"].path)
    assert str(raised.value) == (
        f"{keys['ecdsa'].path}: key type ecdsa-sha2-nistp256 is not supported "
        "(expected ssh-ed25519)"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing", None, "private key file does not exist"),
        (
            "key.pub",
            f"ssh-ed25519 {ED_B64} alice\n",
            "is a public key (expected the private key file, not the .pub file)",
        ),
        (
            "key.pem",
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
            "is not an OpenSSH private key (expected ssh-keygen -t ed25519)",
        ),
        (
            "key.bad",
            # the magic without its terminating NUL byte
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n"
            "-----END OPENSSH PRIVATE KEY-----\n",
            "is not an OpenSSH private key (expected ssh-keygen -t ed25519)",
        ),
    ],
)
def test_sign_refuses_unusable_key_file(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(InvalidInput) as raised:
        sign(MESSAGE, path)
    assert str(raised.value) == f"{path}: {message}"


@pytest.mark.parametrize("passphrase", [None, b""])
def test_sign_with_encrypted_key_and_no_passphrase_names_the_variable(
    keys: dict[str, Key], passphrase: bytes | None
) -> None:
    with pytest.raises(InvalidInput) as raised:
        sign(MESSAGE, keys["locked"].path, passphrase)
    assert str(raised.value) == (
        f"{keys['locked'].path}: private key is encrypted "
        "(expected its passphrase in HARNESS_KEY_PASSPHRASE, or typed at a terminal)"
    )


HAS_BCRYPT = importlib.util.find_spec("bcrypt") is not None


@pytest.mark.skipif(not HAS_BCRYPT, reason="cryptography decrypts OpenSSH keys only with bcrypt")
def test_sign_with_encrypted_key_and_passphrase(keys: dict[str, Key]) -> None:
    armored = sign(MESSAGE, keys["locked"].path, passphrase=b"sesame")
    assert verify(MESSAGE, armored) == keys["locked"].blob
    with pytest.raises(InvalidInput, match="cannot decrypt the private key"):
        sign(MESSAGE, keys["locked"].path, passphrase=b"wrong")


@pytest.mark.skipif(HAS_BCRYPT, reason="only without bcrypt")
def test_sign_with_encrypted_key_without_bcrypt_says_what_is_missing(keys: dict[str, Key]) -> None:
    with pytest.raises(InvalidInput) as raised:
        sign(MESSAGE, keys["locked"].path, passphrase=b"sesame")
    assert "bcrypt" in str(raised.value)
    assert str(raised.value).startswith(f"{keys['locked'].path}: cannot decrypt the private key")
