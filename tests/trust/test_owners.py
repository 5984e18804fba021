"""The owners file (git's allowed_signers format), read as ssh-keygen reads it."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness.errors import InvalidInput
from harness.trust.owners import Owner, load_owners, parse_owners, principals_for_key
from harness.trust.sshwire import public_key_line
from tests.trust.signing import ECDSA_B64, ED_B64, OWNERS, Key, b64, wire

OWNER_LINE = 'principals [namespaces="..."] ssh-ed25519 <base64 key> [comment]'


def test_owners_parse_principals_namespaces_comments_and_line_numbers() -> None:
    text = (
        "# who may approve\n"
        "\n"
        f"alice@example.com,al@example.com ssh-ed25519 {ED_B64} alice's laptop\n"
        f'  bob@example.com namespaces="harness,git" ssh-ed25519 {ED_B64}\r\n'
        f'carol namespaces="x y" ssh-ed25519 {ED_B64} "unbalanced quote in a comment\n'
    )
    alice, bob, carol = parse_owners(text, OWNERS)
    blob = base64.b64decode(ED_B64)
    assert alice == Owner(("alice@example.com", "al@example.com"), blob, None, 3)
    assert bob == Owner(("bob@example.com",), blob, ("harness", "git"), 4)
    assert carol == Owner(("carol",), blob, ("x y",), 5)


BAD_OWNER_LINES = [
    (
        "alice ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 alice",
        "key type ssh-rsa is not supported (expected ssh-ed25519)",
    ),
    (
        f"alice ecdsa-sha2-nistp256 {ECDSA_B64}",
        "key type ecdsa-sha2-nistp256 is not supported (expected ssh-ed25519)",
    ),
    (
        "alice sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t",
        "key type sk-ssh-ed25519@openssh.com is not supported (expected ssh-ed25519)",
    ),
    (
        f"alice ssh-ed25519 {ECDSA_B64}",
        "key type ecdsa-sha2-nistp256 is not supported (expected ssh-ed25519)",
    ),
    (
        f"alice cert-authority ssh-ed25519 {ED_B64}",
        'option cert-authority is not supported (expected only namespaces="...")',
    ),
    (
        f'alice valid-after="20240101" ssh-ed25519 {ED_B64}',
        'option valid-after is not supported (expected only namespaces="...")',
    ),
    (
        f'alice namespaces="harness",cert-authority ssh-ed25519 {ED_B64}',
        'option cert-authority is not supported (expected only namespaces="...")',
    ),
    (
        f'alice namespaces="*" ssh-ed25519 {ED_B64}',
        "namespaces '*' is not a plain list "
        '(expected namespaces="harness" or a comma-separated list without patterns)',
    ),
    (
        f'alice namespaces="harness",namespaces="git" ssh-ed25519 {ED_B64}',
        'option namespaces is malformed (expected one namespaces="..." option)',
    ),
    (
        f"alice namespaces ssh-ed25519 {ED_B64}",
        'option namespaces is malformed (expected one namespaces="..." option)',
    ),
    (
        f'alice namespaces="a",,x ssh-ed25519 {ED_B64}',
        """options are malformed in 'namespaces="a",,x' (expected namespaces="harness")""",
    ),
    (
        f'alice namespaces="harness ssh-ed25519 {ED_B64}',
        """a quote is not closed in 'namespaces="harness' (expected namespaces="harness")""",
    ),
    ("alice ssh-ed25519 AAAA!!!!", "key is not valid base64"),
    (
        f"alice ssh-ed25519 {b64(wire(b'ssh-ed25519') + wire(bytes(31)))}",
        "key data is malformed (expected an ssh-ed25519 public key of 32 bytes)",
    ),
    (
        f"alice ssh-ed25519 {b64(wire(b'ssh-ed25519') + wire(bytes(32)) + b'x')}",
        "key data is malformed (expected an ssh-ed25519 public key of 32 bytes)",
    ),
    (
        f"alice ssh-ed25519 {b64(wire(b'ssh-ed25519'))}",
        "key data is truncated (expected an ssh-ed25519 public key)",
    ),
    ("alice ssh-ed25519", f"no key on the line (expected {OWNER_LINE})"),
    ("alice", f"no key on the line (expected {OWNER_LINE})"),
    (
        f"ssh-ed25519 {ED_B64} alice",
        f"the line starts with a key type, not a principal (expected {OWNER_LINE})",
    ),
    (f"alice {ED_B64}", f"the key type is missing before the key (expected {OWNER_LINE})"),
    (
        f"alice,,bob ssh-ed25519 {ED_B64}",
        "empty principal in 'alice,,bob' (expected principals separated by commas)",
    ),
    (
        f"*@example.com ssh-ed25519 {ED_B64}",
        "principal '*@example.com' is a pattern or quoted "
        "(expected plain principals such as alice@example.com)",
    ),
]


@pytest.mark.parametrize(("line", "message"), BAD_OWNER_LINES)
def test_bad_owners_line_is_refused_naming_file_and_line(line: str, message: str) -> None:
    text = f"# owners\n\n{line}\nbob ssh-ed25519 {ED_B64}\n"
    with pytest.raises(InvalidInput) as raised:
        parse_owners(text, OWNERS)
    assert str(raised.value) == f"{OWNERS}: line 3: {message}"


def test_load_owners_missing_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as raised:
        load_owners(tmp_path / "owners", OWNERS)
    assert str(raised.value) == (
        f"{OWNERS}: file does not exist "
        "(expected owner lines; `harness init --owner P --key PUBKEY`)"
    )


def test_load_owners_reads_the_file(tmp_path: Path) -> None:
    (tmp_path / "owners").write_text(f"alice ssh-ed25519 {ED_B64}\n")
    assert [o.principals for o in load_owners(tmp_path / "owners", OWNERS)] == [("alice",)]


def test_principals_for_key_unions_lines_and_honours_namespaces(keys: dict[str, Key]) -> None:
    alice, bob = public_key_line(keys["alice"].blob), public_key_line(keys["bob"].blob)
    text = (
        f"alice@example.com {alice}\n"
        f'alice@work.example,alice@example.com namespaces="harness" {alice}\n'
        f'bob@example.com namespaces="git" {bob}\n'
    )
    owners = parse_owners(text, OWNERS)
    found = principals_for_key(owners, keys["alice"].blob)
    assert found == ("alice@example.com", "alice@work.example")
    assert principals_for_key(owners, keys["bob"].blob) == ()
    assert principals_for_key(owners, keys["bob"].blob, namespace="git") == ("bob@example.com",)
    assert principals_for_key(owners, keys["carol"].blob) == ()
