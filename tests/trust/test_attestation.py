"""The attestation's parts that need no repository: which record is attested, what
in-toto-attestation refuses before anything is signed, and an envelope's checks."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from harness.errors import InvalidInput, TrustFailure
from harness.record.ledger import Event, Record
from harness.trust.attestfacts import attested
from harness.trust.intoto import (
    SLSA_PROVENANCE,
    check_statement,
    envelope_line,
    sign_statement,
    verify_envelope,
)
from harness.trust.owners import Owner
from harness.trust.shipenvelope import decision_statement, find_decision_envelope
from harness.trust.sshwire import ed25519_blob
from harness.trust.statement import Statement

COMMIT = "a" * 40
SHA = "b" * 64
SUBJECT = [{"name": "g1/ship-commit", "digest": {"gitCommit": COMMIT}}]


def record(seq: int, kind: str, data: dict[str, Any]) -> Record:
    event = Event(seq, "2026-01-01T00:00:00.000Z", kind, "g1", None, 1, data, "0" * 64)
    return Record(event, f"{seq:064x}", "000001.jsonl", seq, 0)


STARTED = record(1, "goal.started", {"steps": ["build", "judge", "ship"], "goal_sha256": SHA})
GATED = record(2, "goal.gated", {"reason": "ship", "status": "parked_at_eyes", "commit": COMMIT})
SHIPPED = record(3, "decision.used", {"decision": "ship", "gate": "ship"})
AFTER = record(4, "step.started", {})


@pytest.mark.parametrize(
    ("records", "said"),
    [
        (
            [record(1, "goal.started", {"steps": ["build", "judge"]})],
            "goal g1: has no ship step: nothing of it ships to attest",
        ),
        ([STARTED], "goal g1: has not reached its ship gate"),
        ([STARTED, GATED], "goal g1: waits at its ship gate: no ship decision has been used yet"),
        (
            [STARTED, GATED, record(3, "decision.used", {"decision": "unpark tamper"})],
            "goal g1: waits at its ship gate",
        ),
    ],
)
def test_a_goal_not_shipped_is_named(records: list[Record], said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        attested(records, "g1")
    assert refused.value.message.startswith(said)


def test_the_record_attested_ends_at_the_ship_decision() -> None:
    assert attested([STARTED, GATED, SHIPPED, AFTER], "g1") == [STARTED, GATED, SHIPPED]


@pytest.mark.parametrize(
    ("made", "said"),
    [
        ({"_type": "https://in-toto.io/Statement/v1", "subject": [], "predicateType": "x",
          "predicate": {"a": 1}}, "At least one subject required"),
        ({"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "n"}],
          "predicateType": "x", "predicate": {"a": 1}}, "At least one digest required"),
        ({"_type": "https://in-toto.io/Statement/v1", "subject": SUBJECT,
          "predicateType": SLSA_PROVENANCE, "predicate": {"buildDefinition": {"nope": 1}}},
         "nope"),
        ({"_type": "https://in-toto.io/Statement/v1", "subject": SUBJECT,
          "predicateType": SLSA_PROVENANCE,
          "predicate": {"runDetails": {"metadata": {"startedOn": "yesterday"}}}},
         "startedOn"),
    ],
)  # fmt: skip
def test_in_toto_attestation_refuses_a_bad_statement(made: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_statement(made)
    assert said in refused.value.message


def key_pair() -> tuple[Ed25519PrivateKey, bytes]:
    key = Ed25519PrivateKey.generate()
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return key, ed25519_blob(raw)


def test_an_envelope_verifies_with_its_key_only_and_not_once_edited() -> None:
    (key, blob), (_, other) = key_pair(), key_pair()
    made = {"_type": "https://in-toto.io/Statement/v1", "subject": SUBJECT,
            "predicateType": "x", "predicate": {"a": 1}}  # fmt: skip
    envelope = sign_statement(made, key)
    assert sign_statement(made, key) == envelope  # ed25519: the same bytes every time
    assert verify_envelope(envelope, [other, blob], "e") == blob
    with pytest.raises(TrustFailure, match="e: no signature verifies with a listed key"):
        verify_envelope(envelope, [other], "e")
    payload = bytearray(base64.b64decode(envelope["payload"]))
    payload[-3] ^= 1
    edited = envelope | {"payload": base64.b64encode(bytes(payload)).decode()}
    with pytest.raises(TrustFailure, match="no signature verifies"):
        verify_envelope(edited, [blob], "e")


def test_the_owner_envelope_is_found_refused_or_missing() -> None:
    (owner_key, owner_blob), (mallory_key, _) = key_pair(), key_pair()
    owners = [Owner(("owner@example.com",), owner_blob, None, 1)]
    decision = Statement("g1", SHA, "ship", COMMIT, f"2:{SHA}")
    fields = {
        "goal": "g1",
        "sha256": SHA,
        "decision": "ship",
        "commit": COMMIT,
        "ledger": f"2:{SHA}",
    }
    honest = envelope_line(sign_statement(decision_statement(decision), owner_key))
    forged = envelope_line(sign_statement(decision_statement(decision), mallory_key))
    other = Statement("g1", SHA, "ship", "c" * 40, f"2:{SHA}")
    unrelated = envelope_line(sign_statement(decision_statement(other), owner_key))

    found = find_decision_envelope(b"not json\n" + unrelated + honest, "g1", fields, owners)
    assert found.envelope == json.loads(honest) and found.note is None
    with pytest.raises(TrustFailure) as refused:
        find_decision_envelope(unrelated + forged, "g1", fields, owners)
    assert refused.value.message == (
        "goals/g1.dsse.jsonl: line 2: no signature verifies with a listed key "
        "(.harness/owners): not the owner's ship decision"
    )
    missing = find_decision_envelope(unrelated, "g1", fields, owners)
    assert missing.envelope is None and missing.note is not None
    assert missing.note.startswith("goals/g1.dsse.jsonl: no envelope of the ship decision used")
