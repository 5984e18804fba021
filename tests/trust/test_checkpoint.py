"""Runner keys, the signed runners list, and checkpoint signatures (trust/runnerkey.py,
runners.py, checkpoint.py): each refusal names what does not hold."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.record.position import Position
from harness.trust.checkpoint import (
    NAMESPACE,
    Checkpoint,
    parse_checkpoint,
    signed_by_one_of,
    signed_checkpoint,
    vouch,
)
from harness.trust.owners import Owner, parse_owners
from harness.trust.runnerkey import (
    ENV_RUNNER_KEY_FILE,
    RunnerKey,
    fingerprint,
    load_runner_key,
    new_runner_key,
)
from harness.trust.runners import append_signature, check_runners, statement_bytes
from harness.trust.sshsig import sign
from harness.trust.sshwire import public_key_line
from tests.trust.signing import Key, ssh_keygen

CELL = b'{"goal":"g1","v":1}\n'
HEAD = Position(7, "ab" * 32)
TREE = "cd" * 20


@pytest.fixture
def runner(tmp_path: Path) -> RunnerKey:
    return new_runner_key(tmp_path / "runner-key", None)


def listed(*keys: RunnerKey, namespaces: str = "") -> tuple[Owner, ...]:
    lines = [f"runner-{i} {namespaces}{key.public_line}" for i, key in enumerate(keys, 1)]
    return parse_owners("\n".join(lines) + "\n", ".harness/runners")


def test_a_new_runner_key_is_private_and_its_fingerprint_is_ssh_keygens(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "runner-key"
    key = new_runner_key(path, None)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(f"{path}.pub").read_text().split()[:2] == key.public_line.split()
    listed_fp = ssh_keygen("-l", "-f", str(path)).stdout.split()[1]
    assert key.fingerprint == listed_fp == fingerprint(key.public_blob)
    # the public half is read from the file's clear header, the same as the private key's
    loaded = load_runner_key({ENV_RUNNER_KEY_FILE: str(path)})
    assert loaded is not None and loaded.public_blob == key.public_blob


def test_a_runner_key_is_never_replaced_nor_made_in_the_repository(tmp_path: Path) -> None:
    path = tmp_path / "runner-key"
    new_runner_key(path, None)
    before = path.read_bytes()
    with pytest.raises(InvalidInput, match="a runner key is already there"):
        new_runner_key(path, None)
    assert path.read_bytes() == before
    with pytest.raises(InvalidInput, match="inside the repository"):
        new_runner_key(tmp_path / "repo" / "k", tmp_path / "repo")
    assert not (tmp_path / "repo" / "k").exists()


def test_a_missing_key_is_none_by_default_and_refused_when_named(tmp_path: Path) -> None:
    assert load_runner_key({"XDG_CONFIG_HOME": str(tmp_path)}) is None
    named = {ENV_RUNNER_KEY_FILE: str(tmp_path / "gone")}
    with pytest.raises(TrustFailure, match=r"HARNESS_RUNNER_KEY_FILE: .* does not exist"):
        load_runner_key(named)
    (tmp_path / "pub").write_text("ssh-ed25519 AAAA\n")
    with pytest.raises(TrustFailure, match=r"is a public key .*\(the runner key\)"):
        load_runner_key({ENV_RUNNER_KEY_FILE: str(tmp_path / "pub")})


def test_the_statement_is_the_documented_lines() -> None:
    assert (
        Checkpoint("g1", HEAD, "ef" * 32, TREE).to_bytes()
        == (
            f"goal-harness-checkpoint v1\ngoal g1\nledger 7:{'ab' * 32}\ncell {'ef' * 32}\n"
            f"tree {TREE}\n"
        ).encode()
    )


def test_an_honest_checkpoint_is_vouched_for_by_its_runner(runner: RunnerKey) -> None:
    signature = signed_checkpoint(runner, "g1", HEAD, CELL, TREE)
    checkpoint, statement, _ = parse_checkpoint(signature, "x")
    assert checkpoint == Checkpoint("g1", HEAD, hashlib.sha256(CELL).hexdigest(), TREE)
    assert signature.startswith(statement)
    vouched = vouch("g1", CELL, signature, listed(runner), HEAD)
    assert vouched.runners == ("runner-1",) and vouched.checkpoint == checkpoint
    assert vouched.text == f"verified by runner runner-1 ({runner.fingerprint})"
    assert vouch("g1", CELL, signature, listed(runner)).runners == ("runner-1",)


def test_each_thing_that_does_not_hold_is_named(runner: RunnerKey, tmp_path: Path) -> None:
    signature = signed_checkpoint(runner, "g1", HEAD, CELL, TREE)
    other = new_runner_key(tmp_path / "other", None)
    cases: list[tuple[str, bytes, bytes | None, tuple[Owner, ...], Position | None, str]] = [
        ("g1", CELL, None, listed(runner), None, "missing: the record's head is not signed"),
        ("g1", CELL, signature, listed(other), None, "not in .harness/runners"),
        ("g2", CELL, signature, listed(runner), None, "signed for goal g1, not g2"),
        ("g1", CELL + b" ", signature, listed(runner), None, "the cell was edited or replaced"),
        ("g1", CELL, signature, listed(runner), Position(8, "00" * 32), "ends at event 8"),
        ("g1", CELL, signature[:-40] + b"\n", listed(runner), None, "malformed"),
        ("g1", CELL, b"not a checkpoint\n", listed(runner), None, "malformed"),
    ]
    edited = signature.replace(b"ledger 7:", b"ledger 6:")
    cases.append(("g1", CELL, edited, listed(runner), None, "does not verify"))
    restricted = listed(runner, namespaces='namespaces="harness" ')
    cases.append(("g1", CELL, signature, restricted, None, "not in .harness/runners"))
    for goal, cell, sig, runners, head, message in cases:
        with pytest.raises(TrustFailure, match=message):
            vouch(goal, cell, sig, runners, head)


def test_a_signature_in_another_namespace_is_not_a_checkpoint(
    runner: RunnerKey, keys: dict[str, Key]
) -> None:
    statement = Checkpoint("g1", HEAD, hashlib.sha256(CELL).hexdigest(), TREE).to_bytes()
    approval_namespace = statement + runner.sign(statement, "harness").encode()
    with pytest.raises(TrustFailure, match=f"namespace is 'harness'.*{NAMESPACE}"):
        vouch("g1", CELL, approval_namespace, listed(runner))


def test_signed_by_one_of_names_a_listed_signer_over_these_cell_bytes(
    runner: RunnerKey, tmp_path: Path
) -> None:
    signature = signed_checkpoint(runner, "g1", HEAD, CELL, TREE)
    other = new_runner_key(tmp_path / "other", None)
    both = {runner.public_blob, other.public_blob}
    assert signed_by_one_of(CELL, signature, both)
    assert not signed_by_one_of(CELL, signature, {other.public_blob})
    assert not signed_by_one_of(CELL + b" ", signature, both)
    assert not signed_by_one_of(CELL, None, both) and not signed_by_one_of(CELL, b"junk", both)


def _runners_file(runner: RunnerKey) -> bytes:
    return f"runner-1 {runner.public_line}\n".encode()


def test_a_runners_file_counts_only_with_an_owners_signature_over_its_bytes(
    runner: RunnerKey, keys: dict[str, Key], owners: tuple[Owner, ...], tmp_path: Path
) -> None:
    data = _runners_file(runner)
    sig = tmp_path / "runners.sig"
    with pytest.raises(TrustFailure, match="no owner has signed its bytes"):
        check_runners(data, None, owners)
    by_bob = sign(statement_bytes(data), keys["bob"].path)
    append_signature(sig, statement_bytes(data), by_bob)
    with pytest.raises(TrustFailure, match=r"signed by a key that is not in \.harness/owners"):
        check_runners(data, sig.read_bytes(), owners)
    append_signature(sig, statement_bytes(data), sign(statement_bytes(data), keys["alice"].path))
    assert [r.principals for r in check_runners(data, sig.read_bytes(), owners)] == [("runner-1",)]
    edited = data + f"mallory {public_key_line(keys['bob'].blob)}\n".encode()
    with pytest.raises(TrustFailure, match="no owner has signed its bytes"):
        check_runners(edited, sig.read_bytes(), owners)
    with pytest.raises(TrustFailure, match=r"\.harness/runners: line 1: .*; no runner's record"):
        check_runners(b"runner-1 ssh-rsa AAAA\n", sig.read_bytes(), owners)
    bad = b"harness-runners v1\nsha256 nothex\n" + by_bob.encode()
    with pytest.raises(TrustFailure, match=r"runners\.sig: record 1: statement is not valid"):
        check_runners(data, bad, owners)
