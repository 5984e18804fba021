"""in-toto Statements in DSSE envelopes, signed with an ed25519 SSH key (issue 31).

The maintained libraries do the standard parts: securesystemslib signs and verifies the
DSSE envelopes (`CryptoSigner` over the key cryptography loads from the OpenSSH file,
`Envelope.verify` with an `SSlibKey`), and in-toto-attestation checks every Statement and
the SLSA provenance and test-result predicates against its own protobuf definitions before
anything is signed. Both come with the optional `attest` extra and are imported here, only
when an attestation is made or checked: never on `harness run`'s path unless a goal ships.

The statement is built as JSON by the harness (the library's protobuf `Struct` turns every
integer into a float) and serialised canonically (sorted keys, no spaces, UTF-8), so the
same record gives the same bytes, and ed25519 signatures are deterministic: the same
envelope, byte for byte, every time (docs/specs/attest.md).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.errors import InvalidInput, TrustFailure
from harness.store.fsutil import canonical_json
from harness.trust.sshwire import ed25519_raw_key

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
INSTALL_HINT = "pip install 'goal-harness[attest]'"
# This project's own types. Its public address is not settled, so they live under the
# reserved `.invalid` name the harness already commits as (docs/specs/attest.md).
TYPES = "https://goal-harness.invalid/attest"
BUILD_TYPE = f"{TYPES}/build/v1"
GOAL_RUN = f"{TYPES}/goal-run/v1"
SHIP_DECISION = f"{TYPES}/ship-decision/v1"
RUNNER = f"{TYPES}/runner"


class AttestUnavailable(InvalidInput):
    """The `attest` extra is not installed (exit 2, naming how to install it)."""


def require_attest() -> None:
    """Import the attest extra's libraries, or say how to install them."""
    try:
        import in_toto_attestation.v1.statement  # noqa: F401
        import securesystemslib.dsse  # noqa: F401
    except ImportError as exc:
        raise AttestUnavailable(
            f"attestations need the attest extra ({exc.name} is not installed): {INSTALL_HINT}"
        ) from None


def attest_available() -> bool:
    try:
        require_attest()
    except AttestUnavailable:
        return False
    return True


def statement(
    subjects: Sequence[Mapping[str, Any]], predicate_type: str, predicate: Mapping[str, Any]
) -> dict[str, Any]:
    """An in-toto Statement v1, checked by in-toto-attestation before it is signed."""
    made = {
        "_type": STATEMENT_TYPE,
        "subject": [dict(s) for s in subjects],
        "predicateType": predicate_type,
        "predicate": dict(predicate),
    }
    check_statement(made)
    return made


def check_statement(made: Mapping[str, Any]) -> None:
    """Refuse a statement in-toto-attestation refuses: its Statement rules (a type, subjects
    each with a digest, a predicate type and predicate), and for the predicate types it
    defines (SLSA provenance v1, test-result), its protobuf's fields and their types."""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    try:
        proto = json_format.ParseDict(dict(made), statement_pb2.Statement())
        Statement.copy_from_pb(proto).validate()
        predicate = _PREDICATE_PROTOS.get(str(made.get("predicateType")))
        if predicate is not None:
            json_format.ParseDict(dict(made["predicate"]), predicate())
    except (json_format.ParseError, ValueError) as exc:
        raise InvalidInput(f"in-toto statement {made.get('predicateType')}: {exc}") from None


def _provenance() -> Any:
    from in_toto_attestation.predicates.provenance.v1 import provenance_pb2

    return provenance_pb2.Provenance()


def _test_result() -> Any:
    from in_toto_attestation.predicates.test_result.v0 import test_result_pb2

    return test_result_pb2.TestResult()


_PREDICATE_PROTOS = {SLSA_PROVENANCE: _provenance, TEST_RESULT: _test_result}


def sign_statement(made: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """A DSSE envelope of the statement's canonical bytes, signed by `key` with
    securesystemslib; its keyid is securesystemslib's default keyid of the public key."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner

    envelope = Envelope(canonical_json(made), PAYLOAD_TYPE, {})
    envelope.sign(CryptoSigner(key))
    return envelope.to_dict()


def envelope_line(envelope: Mapping[str, Any]) -> bytes:
    """One JSON Lines line: the envelope's canonical JSON and a newline."""
    return canonical_json(dict(envelope)) + b"\n"


def keyid(key_blob: bytes) -> str:
    """securesystemslib's default keyid of an SSH ed25519 public key (the DSSE keyid)."""
    return str(_sslib_key(key_blob).keyid)


def _sslib_key(key_blob: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from securesystemslib.signer import SSlibKey

    raw = ed25519_raw_key(key_blob)
    return SSlibKey.from_crypto(Ed25519PublicKey.from_public_bytes(raw))


def verify_envelope(envelope: Mapping[str, Any], keys: Sequence[bytes], source: str) -> bytes:
    """The key (of `keys`, SSH public blobs) whose signature over the envelope verifies,
    checked by securesystemslib's `Envelope.verify`; TrustFailure otherwise."""
    import copy

    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    try:
        parsed = Envelope.from_dict(copy.deepcopy(dict(envelope)))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TrustFailure(f"{source}: not a DSSE envelope ({exc})") from None
    if parsed.payload_type != PAYLOAD_TYPE:
        raise TrustFailure(f"{source}: payloadType is {parsed.payload_type!r} ({PAYLOAD_TYPE})")
    by_id = {keyid(blob): blob for blob in keys}
    if not by_id:
        raise TrustFailure(f"{source}: no key to verify it with")
    try:
        accepted = parsed.verify(list(_sslib_key(blob) for blob in by_id.values()), 1)
    except VerificationError:
        raise TrustFailure(f"{source}: no signature verifies with a listed key") from None
    return by_id[next(iter(accepted))]


def payload_of(envelope: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The statement an envelope carries (read only after its signature verified)."""
    import json

    try:
        data = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
    except (KeyError, ValueError) as exc:
        raise TrustFailure(f"{source}: the payload is not a JSON statement ({exc})") from None
    if not isinstance(data, dict) or data.get("_type") != STATEMENT_TYPE:
        raise TrustFailure(f"{source}: the payload is not an in-toto Statement v1")
    return data
