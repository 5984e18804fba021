"""Owners, statements, SSHSIG and approval files, checked against real ssh-keygen."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import shutil
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.trust.approval import (
    Owner,
    SignedRecord,
    Statement,
    append_record,
    find_run_approval,
    format_record,
    load_approval_file,
    load_owners,
    parse_approval_file,
    parse_owners,
    parse_public_key,
    principals_for_key,
    public_key_line,
    sign,
    verify,
    verify_record,
)

SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
OWNERS = ".harness/owners"
APPROVAL = "goals/fix-login.approval"
GOAL = "fix-login"
SHA = hashlib.sha256(b"goal file v2").hexdigest()
OLD_SHA = hashlib.sha256(b"goal file v1").hexdigest()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LEDGER = f"12:{'ab' * 32}"
MESSAGE = b"harness-approval v1\ngoal fix-login\n"
# A fixed real ed25519 public key and an ecdsa one, for tables that need no private key.
ED_B64 = "AAAAC3NzaC1lZDI1NTE5AAAAIG1mhH6c2ptlYmGLqg06RPIF08hz3cyrBnMvVX2IYOh/"
ECDSA_B64 = (
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBN2XbzJ1ymXXQg0hD0wJhTB/fFfRg+jDqI/"
    "YhlyF+5U0IlDQoMXxn6SAdIikRQxVDM0BidiOucm4gSjc30vpRaY="
)
OWNER_LINE = 'principals [namespaces="..."] ssh-ed25519 <base64 key> [comment]'
NOT_VERIFIED = "signature: does not verify: the signed text or the signature was changed"


def wire(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def ssh_keygen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SSH_KEYGEN, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


@dataclass(frozen=True)
class Key:
    path: Path
    blob: bytes

    @property
    def pub(self) -> str:
        return Path(f"{self.path}.pub").read_text()


def make_key(folder: Path, name: str, *options: str) -> Key:
    path = folder / name
    done = ssh_keygen("-q", "-C", "test", "-f", str(path), *options)
    assert done.returncode == 0, done.stderr
    pub = Path(f"{path}.pub").read_text()
    blob = base64.b64decode(pub.split()[1])
    return Key(path, blob)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Key]:
    folder = tmp_path_factory.mktemp("keys")
    return {
        "alice": make_key(folder, "alice", "-t", "ed25519", "-N", ""),
        "bob": make_key(folder, "bob", "-t", "ed25519", "-N", ""),
        "carol": make_key(folder, "carol", "-t", "ed25519", "-N", ""),
        "ecdsa": make_key(folder, "ecdsa", "-t", "ecdsa", "-b", "256", "-N", ""),
        "locked": make_key(folder, "locked", "-t", "ed25519", "-N", "sesame", "-a", "2"),
    }


@pytest.fixture(scope="module")
def owners(keys: dict[str, Key]) -> tuple[Owner, ...]:
    text = (
        f"alice@example.com {public_key_line(keys['alice'].blob)}\n"
        f"carol@example.com {public_key_line(keys['carol'].blob)}\n"
    )
    return parse_owners(text, OWNERS)


# --- owners ----------------------------------------------------------------------------------


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


# --- statements ------------------------------------------------------------------------------

RUN = Statement(GOAL, SHA, "run")
SHIP = Statement(GOAL, SHA, "ship", COMMIT, LEDGER)
UNPARK = Statement(GOAL, SHA, "unpark destructive:schema_change", COMMIT, LEDGER)
EXTEND = Statement(GOAL, SHA, "extend-budget max_cost_usd=40,max_seconds=3h", COMMIT, LEDGER)


def test_statement_bytes_are_the_contract_lines() -> None:
    assert RUN.to_bytes() == (
        f"harness-approval v1\ngoal fix-login\nsha256 {SHA}\ndecision run\n".encode()
    )
    assert SHIP.to_bytes() == (
        f"harness-approval v1\ngoal fix-login\nsha256 {SHA}\ndecision ship\n"
        f"commit {COMMIT}\nledger {LEDGER}\n".encode()
    )


@pytest.mark.parametrize("statement", [RUN, SHIP, UNPARK, EXTEND])
def test_statement_round_trips(statement: Statement) -> None:
    assert Statement.parse(statement.to_bytes(), "s") == statement


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"decision": "run", "commit": COMMIT, "ledger": LEDGER},
            "statement: decision: decision run must not carry commit and ledger lines",
        ),
        (
            {"decision": "ship"},
            "statement: decision: decision ship needs commit and ledger lines "
            "(expected commit <sha> and ledger <seq>:<hash> lines after the decision)",
        ),
        (
            {"decision": "ship", "commit": COMMIT},
            "statement: ledger: commit and ledger go together "
            "(expected commit <sha> and ledger <seq>:<hash> lines after the decision)",
        ),
        (
            {"goal": "Fix_Login", "decision": "run"},
            "statement: goal: goal 'Fix_Login' is not valid (expected ^[a-z0-9][a-z0-9-]{0,62}$)",
        ),
        (
            {"decision": "run\ngoal other"},
            "statement: decision: decision 'run\\ngoal other' is not valid (expected run, ship, "
            "unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>)",
        ),
        (
            {
                "decision": "extend-budget max_turns=5,max_turns=50",
                "commit": COMMIT,
                "ledger": LEDGER,
            },
            "statement: decision: decision 'extend-budget max_turns=5,max_turns=50' repeats a "
            "key (expected each budget key once)",
        ),
        (
            {"decision": "ship", "commit": "", "ledger": LEDGER},
            "statement: commit: commit '' is not valid (expected 40 (or 64) lowercase hex digits)",
        ),
    ],
)
def test_statement_constructor_refuses(fields: dict[str, Any], message: str) -> None:
    arguments = {"goal": GOAL, "sha256": SHA, **fields}
    with pytest.raises(InvalidInput) as raised:
        Statement(**arguments)
    assert str(raised.value) == message


RUN_LINES = ["harness-approval v1", "goal fix-login", f"sha256 {SHA}", "decision run"]
SHIP_LINES = [*RUN_LINES[:3], "decision ship", f"commit {COMMIT}", f"ledger {LEDGER}"]


def joined(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def replaced(lines: list[str], index: int, line: str) -> bytes:
    return joined([*lines[:index], line, *lines[index + 1 :]])


BAD_STATEMENTS = [
    (
        joined(RUN_LINES)[:-1],
        "statement does not end with a newline (expected a newline after every line)",
    ),
    (b"", "statement does not end with a newline (expected a newline after every line)"),
    (joined(RUN_LINES) + b"\xff\n", "statement is not UTF-8 text"),
    (
        replaced(RUN_LINES, 0, "harness-approval v2"),
        "line 1: first line is 'harness-approval v2' (expected 'harness-approval v1')",
    ),
    (
        joined(RUN_LINES).replace(b"\n", b"\r\n"),
        "line 1: first line is 'harness-approval v1\\r' (expected 'harness-approval v1')",
    ),
    (
        joined([*RUN_LINES, f"commit {COMMIT}"]),
        "statement has 5 lines (expected 4, or 6 with commit <sha> and ledger <seq>:<hash> "
        "lines after the decision)",
    ),
    (
        joined([*SHIP_LINES, "note hi"]),
        "statement has 7 lines (expected 4, or 6 with commit <sha> and ledger <seq>:<hash> "
        "lines after the decision)",
    ),
    (
        joined(RUN_LINES) + b"\n",
        "statement has 5 lines (expected 4, or 6 with commit <sha> and "
        "ledger <seq>:<hash> lines after the decision)",
    ),
    (
        replaced(RUN_LINES, 1, "goal  fix-login"),
        "line 2: goal ' fix-login' is not valid (expected ^[a-z0-9][a-z0-9-]{0,62}$)",
    ),
    (
        joined([RUN_LINES[0], RUN_LINES[2], RUN_LINES[1], RUN_LINES[3]]),
        f"line 2: line is 'sha256 {SHA}' (expected goal <value>)",
    ),
    (
        replaced(RUN_LINES, 2, f"sha256 {SHA.upper()}"),
        f"line 3: sha256 '{SHA.upper()}' is not valid (expected 64 lowercase hex digits)",
    ),
    (
        replaced(RUN_LINES, 2, f"sha256 {SHA[:-1]}"),
        f"line 3: sha256 '{SHA[:-1]}' is not valid (expected 64 lowercase hex digits)",
    ),
    (
        replaced(RUN_LINES, 3, "Decision run"),
        "line 4: line is 'Decision run' (expected decision <value>)",
    ),
    (
        replaced(RUN_LINES, 3, "decision deploy"),
        "line 4: decision 'deploy' is not valid "
        "(expected run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>)",
    ),
    (
        replaced(RUN_LINES, 3, "decision unpark"),
        "line 4: decision 'unpark' is not valid "
        "(expected run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>)",
    ),
    (
        replaced(RUN_LINES, 3, "decision extend-budget "),
        "line 4: decision 'extend-budget ' is not valid "
        "(expected run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>)",
    ),
    (
        joined([*RUN_LINES, f"commit {COMMIT}", f"ledger {LEDGER}"]),
        "line 4: decision run must not carry commit and ledger lines",
    ),
    (
        replaced(RUN_LINES, 3, "decision ship"),
        "line 4: decision ship needs commit and ledger lines "
        "(expected commit <sha> and ledger <seq>:<hash> lines after the decision)",
    ),
    (
        replaced(SHIP_LINES, 4, f"commit {COMMIT[:7]}"),
        f"line 5: commit '{COMMIT[:7]}' is not valid (expected 40 (or 64) lowercase hex digits)",
    ),
    (
        replaced(SHIP_LINES, 5, f"ledger 012:{'ab' * 32}"),
        f"line 6: ledger '012:{'ab' * 32}' is not valid (expected <seq>:<64 lowercase hex digits>)",
    ),
    (
        replaced(RUN_LINES, 3, "decision " + "x" * 200),
        f"line 4: decision '{'x' * 100}'… is not valid "
        "(expected run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>)",
    ),
    (
        joined([*SHIP_LINES[:4], f"ledger {LEDGER}", f"commit {COMMIT}"]),
        f"line 5: line is 'ledger {LEDGER}' (expected commit <value>)",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD_STATEMENTS)
def test_statement_parse_is_strict(data: bytes, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        Statement.parse(data, "goals/x.approval: record 2")
    assert str(raised.value) == f"goals/x.approval: record 2: {message}"


# --- SSHSIG ----------------------------------------------------------------------------------


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
        "(expected its passphrase in HARNESS_KEY_PASSPHRASE)"
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


# --- approval files --------------------------------------------------------------------------


def signed(statement: Statement, key: Key) -> tuple[Statement, str]:
    return statement, sign(statement.to_bytes(), key.path)


def approval_text(*records: tuple[Statement, str]) -> str:
    return "\n".join(format_record(statement, armored) for statement, armored in records)


def test_approval_file_with_two_records_parses(keys: dict[str, Key]) -> None:
    first, second = signed(RUN, keys["alice"]), signed(SHIP, keys["carol"])
    text = approval_text(first, second)
    assert text == (
        RUN.to_bytes().decode() + first[1] + "\n" + SHIP.to_bytes().decode() + second[1]
    )
    records = parse_approval_file(text, APPROVAL)
    assert records == (
        SignedRecord(RUN, RUN.to_bytes(), first[1], 1),
        SignedRecord(SHIP, SHIP.to_bytes(), second[1], 2),
    )


def test_append_record_creates_then_appends_after_one_blank_line(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    path = tmp_path / "goals" / "fix-login.approval"
    first, second = signed(RUN, keys["alice"]), signed(SHIP, keys["carol"])
    append_record(path, *first)
    assert path.read_text() == format_record(*first)
    append_record(path, *second)
    assert path.read_text() == approval_text(first, second)
    assert [r.statement for r in load_approval_file(path, APPROVAL)] == [RUN, SHIP]


def test_load_approval_file_missing_is_empty(tmp_path: Path) -> None:
    assert load_approval_file(tmp_path / "none.approval", APPROVAL) == ()


def test_approval_file_that_is_not_utf8_is_invalid_input(tmp_path: Path) -> None:
    path = tmp_path / "fix-login.approval"
    path.write_bytes(b"harness-approval v1\n\xff\n")
    with pytest.raises(InvalidInput) as raised:
        load_approval_file(path, APPROVAL)
    assert str(raised.value) == f"{APPROVAL}: is not UTF-8 text"
    with pytest.raises(InvalidInput):
        append_record(path, RUN, "")
    assert path.read_bytes() == b"harness-approval v1\n\xff\n"


@pytest.mark.parametrize(
    "armored",
    [
        "-----BEGIN SSH SIGNATURE-----\nAAAA\n\n-----END SSH SIGNATURE-----\n",
        "-----BEGIN SSH SIGNATURE-----\nAAAA\n",
        "not a signature\n",
    ],
)
def test_append_record_refuses_a_block_that_would_not_read_back(
    keys: dict[str, Key], tmp_path: Path, armored: str
) -> None:
    path = tmp_path / "fix-login.approval"
    append_record(path, *signed(RUN, keys["alice"]))
    before = path.read_text()
    with pytest.raises(InvalidInput):
        append_record(path, SHIP, armored)
    assert path.read_text() == before


def test_append_record_refuses_a_block_that_smuggles_a_second_record(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    path = tmp_path / "fix-login.approval"
    run, ship = signed(RUN, keys["alice"]), signed(SHIP, keys["alice"])
    with pytest.raises(InvalidInput) as raised:
        append_record(path, RUN, run[1] + "\n" + format_record(*ship))
    assert str(raised.value) == f"{path}: the new record does not read back as one record"
    assert not path.exists()


def bad_approval_cases(run: tuple[Statement, str]) -> list[tuple[str, str]]:
    record = format_record(*run)
    statement_text = RUN.to_bytes().decode()
    return [
        (
            record[:-1],
            f"{APPROVAL}: does not end with a newline "
            "(expected -----END SSH SIGNATURE----- then a newline)",
        ),
        (
            record + "\n\n" + record,
            f"{APPROVAL}: record 2: starts with a blank line "
            "(expected one blank line between records)",
        ),
        (
            record + "\n" + statement_text,
            f"{APPROVAL}: record 2: has no -----BEGIN SSH SIGNATURE----- line "
            "(expected the statement lines, then -----BEGIN SSH SIGNATURE-----, "
            "and one blank line between records)",
        ),
        (
            record + record,
            f"{APPROVAL}: record 1: has two signature blocks "
            "(expected one blank line between records)",
        ),
        (
            record.replace("-----END SSH SIGNATURE-----\n", "-----END SSH SIGNATURE-----\nx\n"),
            f"{APPROVAL}: record 1: does not end with -----END SSH SIGNATURE-----",
        ),
        (
            record + "\n" + record.replace(f"sha256 {SHA}", "sha256 abc"),
            f"{APPROVAL}: record 2: line 3: sha256 'abc' is not valid "
            "(expected 64 lowercase hex digits)",
        ),
    ]


def test_malformed_approval_files_name_file_and_record(keys: dict[str, Key]) -> None:
    # One test over a table: the cases need a real signature, made once.
    for text, message in bad_approval_cases(signed(RUN, keys["alice"])):
        with pytest.raises(InvalidInput) as raised:
            parse_approval_file(text, APPROVAL)
        assert str(raised.value) == message, text


def record_of(statement: Statement, key: Key, index: int = 1) -> SignedRecord:
    armored = sign(statement.to_bytes(), key.path)
    return SignedRecord(statement, statement.to_bytes(), armored, index)


def test_verify_record_names_the_owner(keys: dict[str, Key], owners: tuple[Owner, ...]) -> None:
    verdict = verify_record(record_of(RUN, keys["carol"]), owners, APPROVAL)
    assert verdict.principals == ("carol@example.com",)


def test_verify_record_refuses_a_key_not_in_owners(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    with pytest.raises(TrustFailure) as raised:
        verify_record(record_of(RUN, keys["bob"], 3), owners, APPROVAL)
    assert str(raised.value) == (
        f"{APPROVAL}: record 3: signed by a key that is not in .harness/owners "
        f"({public_key_line(keys['bob'].blob)})"
    )


def test_verify_record_refuses_a_signature_over_other_bytes(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    real = record_of(RUN, keys["alice"], 2)
    forged = SignedRecord(SHIP, SHIP.to_bytes(), real.armored, 2)
    with pytest.raises(TrustFailure) as raised:
        verify_record(forged, owners, APPROVAL)
    assert str(raised.value) == f"{APPROVAL}: record 2: {NOT_VERIFIED}"


def test_verify_record_refuses_owner_restricted_to_another_namespace(keys: dict[str, Key]) -> None:
    owners = parse_owners(f'alice namespaces="git" {public_key_line(keys["alice"].blob)}\n', OWNERS)
    with pytest.raises(TrustFailure, match=r"not in \.harness/owners"):
        verify_record(record_of(RUN, keys["alice"]), owners, APPROVAL)


def test_find_run_approval_takes_the_newest_valid_record(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    records = [
        record_of(RUN, keys["alice"], 1),
        record_of(RUN, keys["carol"], 2),
        record_of(SHIP, keys["alice"], 3),
    ]
    verdict = find_run_approval(records, owners, GOAL, SHA, APPROVAL)
    assert (verdict.record.index, verdict.principals) == (2, ("carol@example.com",))


def test_find_run_approval_skips_a_newer_forged_record(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    records = [record_of(RUN, keys["alice"], 1), record_of(RUN, keys["bob"], 2)]
    verdict = find_run_approval(records, owners, GOAL, SHA, APPROVAL)
    assert (verdict.record.index, verdict.principals) == (1, ("alice@example.com",))


HINT = "run `harness approve fix-login --key PRIVKEY`"
REFUSALS: list[tuple[str, list[tuple[Statement, str]], str]] = [
    ("no records", [], f"{APPROVAL}: goal fix-login is not approved: {HINT}"),
    (
        "only a ship decision",
        [(SHIP, "alice")],
        f"{APPROVAL}: goal fix-login is not approved: {HINT}",
    ),
    (
        "goal file changed",
        [(Statement(GOAL, OLD_SHA, "run"), "alice")],
        f"{APPROVAL}: the goal file changed after it was approved (approved sha256 "
        f"{OLD_SHA[:12]}…, file is {SHA[:12]}…): re-approve with "
        "`harness approve fix-login --key PRIVKEY`",
    ),
    (
        "another goal",
        [(Statement("other-goal", SHA, "run"), "alice")],
        f"{APPROVAL}: goal fix-login is not approved: record 1 is for goal other-goal, "
        f"not fix-login; {HINT}",
    ),
    (
        "signed by a non-owner",
        [(RUN, "bob")],
        f"{APPROVAL}: record 1: signed by a key that is not in .harness/owners (BOB)",
    ),
]


@pytest.mark.parametrize(
    ("records", "message"), [case[1:] for case in REFUSALS], ids=[case[0] for case in REFUSALS]
)
def test_find_run_approval_refuses_with_the_most_helpful_reason(
    keys: dict[str, Key],
    owners: tuple[Owner, ...],
    records: list[tuple[Statement, str]],
    message: str,
) -> None:
    built = [record_of(st, keys[who], i) for i, (st, who) in enumerate(records, 1)]
    with pytest.raises(TrustFailure) as raised:
        find_run_approval(built, owners, GOAL, SHA, APPROVAL)
    assert str(raised.value) == message.replace("BOB", public_key_line(keys["bob"].blob))


def test_find_run_approval_refuses_a_bad_signature(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    stale = record_of(Statement(GOAL, OLD_SHA, "run"), keys["alice"], 1)
    forged = SignedRecord(RUN, RUN.to_bytes(), stale.armored, 2)
    with pytest.raises(TrustFailure) as raised:
        find_run_approval([stale, forged], owners, GOAL, SHA, APPROVAL)
    assert str(raised.value) == f"{APPROVAL}: record 2: {NOT_VERIFIED}"


def test_approval_signed_with_ssh_keygen_is_accepted_end_to_end(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    (tmp_path / "statement").write_bytes(RUN.to_bytes())
    done = ssh_keygen(
        "-Y", "sign", "-f", str(keys["alice"].path), "-n", "harness", "statement", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    path = tmp_path / "fix-login.approval"
    append_record(path, RUN, (tmp_path / "statement.sig").read_text())
    (tmp_path / "owners").write_text(f"alice@example.com {keys['alice'].pub}")
    owners = load_owners(tmp_path / "owners", OWNERS)
    verdict = find_run_approval(load_approval_file(path, APPROVAL), owners, GOAL, SHA, APPROVAL)
    assert verdict.principals == ("alice@example.com",)
