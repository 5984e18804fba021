"""In-toto attestations (issue 31): `harness attest` and the ship step's HARNESS_ATTESTATION.

A runner listed in `.harness/runners` takes a goal to its ship gate; the owner ships it with
`harness ship`, which also signs the decision as a DSSE envelope. The ship step, contained,
reads the bundle; `harness attest` writes the same bytes. Every envelope verifies with
securesystemslib's `Envelope.verify` and in-toto's own `Envelope.verify_signature` against
the right key and no other, every predicate validates against its JSON Schema, and a
one-byte edit of any envelope fails."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from cryptography.hazmat.primitives.serialization import load_ssh_public_key
from in_toto.exceptions import SignatureVerificationError
from in_toto.models.metadata import Envelope as InTotoEnvelope
from in_toto.models.metadata import Metadata
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from harness.trust.intoto import envelope_line, sign_statement
from harness.trust.runnerkey import load_runner_key
from tests.e2e.test_signed_checkpoints import list_runner
from tests.managed import ManagedFactory, ManagedRepo, base_goal, git

SCHEMAS = Path(__file__).resolve().parents[2] / "harness" / "model" / "schema"
PREDICATES = {
    "https://slsa.dev/provenance/v1": "attest-provenance.schema.json",
    "https://in-toto.io/attestation/test-result/v0.1": "attest-test-result.schema.json",
    "https://goal-harness.invalid/attest/goal-run/v1": "attest-goal-run.schema.json",
    "https://goal-harness.invalid/attest/ship-decision/v1": "attest-ship-decision.schema.json",
}
# The ship step, contained: what it was given, read from inside the sandbox.
SHIP = {
    "run": [
        "sh",
        "-c",
        'cat "$HARNESS_ATTESTATION" > "$TEST_COUNTER_DIR/seen.jsonl" && '
        'echo "$HARNESS_SHIP_COMMIT" > "$TEST_COUNTER_DIR/ship-commit"',
    ]
}
JUDGE = r"""
import os, sys
from pathlib import Path
value = Path("value.txt").read_text().strip() if Path("value.txt").exists() else ""
Path("reports").mkdir(exist_ok=True)
Path("reports/junit.xml").write_text(
    '<testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"/>'
    '<testcase classname="t" name="c"><skipped/></testcase></testsuite>'
)
sys.exit(0 if value == "right" else 1)
"""


def public_key(line: str) -> SSlibKey:
    return SSlibKey.from_crypto(load_ssh_public_key(line.encode()))


def envelopes(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in data.splitlines()]


def payload(envelope: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return decoded


def sslib_verifies(envelope: dict[str, Any], key: SSlibKey) -> bool:
    try:
        Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)
    except VerificationError:
        return False
    return True


def in_toto_verifies(envelope: dict[str, Any], key: SSlibKey) -> bool:
    """in-toto 3's verifier for a DSSE envelope (Metadata.from_dict picks it by its
    payloadType); in-toto's `in_toto_verify` checks layouts and links, not Statements."""
    metadata = Metadata.from_dict(copy.deepcopy(envelope))
    assert isinstance(metadata, InTotoEnvelope)
    try:
        metadata.verify_signature(key.to_dict() | {"keyid": key.keyid})
    except SignatureVerificationError:
        return False
    return True


def one_byte_edits(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    """The envelope with one byte of its statement changed, and with one byte of its
    signature changed."""
    statement = bytearray(base64.b64decode(envelope["payload"]))
    statement[len(statement) // 2] ^= 0x01
    edited = copy.deepcopy(envelope) | {"payload": base64.b64encode(bytes(statement)).decode()}
    signature = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    signature[7] ^= 0x01
    forged = copy.deepcopy(envelope)
    forged["signatures"][0]["sig"] = base64.b64encode(bytes(signature)).decode()
    return [edited, forged]


@pytest.fixture
def shipped(managed: ManagedFactory, tmp_path: Path, contained: None) -> tuple[ManagedRepo, str]:
    """A goal taken to its ship gate by a listed runner, shipped by the owner, its steps
    contained; returns the repository and the runner's public key line."""
    goal = base_goal() | {"ship": SHIP}
    # The build says its version as aider does on its first line (agents.md).
    python = goal["build"]["run"][0]
    say = 'echo "Aider v0.86.2"; exec "$0" agent.py'
    goal["build"] = goal["build"] | {"run": ["sh", "-c", say, python], "format": "aider"}
    goal["judge"] = goal["judge"] | {"run": [goal["judge"]["run"][0], "junit_judge.py"]}
    goal["judge"]["junit"] = "reports/junit.xml"
    repo = managed(goal=goal, mode="fix-on-1", files={"junit_judge.py": JUDGE})
    key_file = tmp_path / "runner-config" / "runner-key"
    runner = list_runner(repo, "runner-1", key_file)
    repo.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "parked_at_eyes"
    waiting = repo.harness("attest", "g1", check=2)
    assert "g1: waits at its ship gate: no ship decision has been used yet" in waiting.stderr
    signed = repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)
    assert "note:" not in signed.stdout
    assert repo.status()["status"] == "completed"
    # The owner commits the decision and its envelope, as `harness ship` says to.
    assert (repo.root / "goals" / "g1.dsse.jsonl").is_file()
    git(repo.root, "add", "goals")
    git(repo.root, "commit", "-qm", "ship g1")
    return repo, runner


def _check_provenance(
    provenance: dict[str, Any], repo: ManagedRepo, goal_sha: str, finished: str
) -> None:
    """The owner's inputs (goal file, the agent as it said its version), the runner's key
    as the builder, the ship decision's time as the end."""
    parameters = provenance["buildDefinition"]["externalParameters"]
    assert parameters["goal"]["sha256"] == goal_sha
    assert parameters["agent"]["version"] == "0.86.2"
    runner_key = load_runner_key(repo.env)
    assert runner_key is not None
    builder = provenance["runDetails"]["builder"]["id"]
    assert builder == f"https://goal-harness.invalid/attest/runner#{runner_key.fingerprint}"
    assert provenance["runDetails"]["metadata"]["finishedOn"] == finished


def test_attest_bundle_verifies_with_in_toto_and_securesystemslib(
    shipped: tuple[ManagedRepo, str], tmp_path: Path
) -> None:
    repo, runner_line = shipped
    seen = (repo.counters / "seen.jsonl").read_bytes()
    out = tmp_path / "g1.intoto.jsonl"
    repo.harness("attest", "g1", "--out", str(out), check=0)
    assert out.read_bytes() == seen  # the ship step got, contained, what attest writes
    seen.decode("ascii")  # printed raw to a terminal: nothing in it but ASCII
    assert repo.harness("attest", "g1", check=0).stdout.encode() == seen  # byte-stable

    runner, owner = public_key(runner_line), public_key(repo.key.public)
    lines = envelopes(seen)
    kinds = [payload(e)["predicateType"] for e in lines]
    assert kinds == list(PREDICATES)
    signers = [runner, runner, runner, owner]
    for envelope, right in zip(lines, signers, strict=True):
        wrong = owner if right is runner else runner
        assert envelope["payloadType"] == "application/vnd.in-toto+json"
        assert [s["keyid"] for s in envelope["signatures"]] == [right.keyid]
        assert sslib_verifies(envelope, right) and in_toto_verifies(envelope, right)
        assert not sslib_verifies(envelope, wrong) and not in_toto_verifies(envelope, wrong)
        for edited in one_byte_edits(envelope):
            assert not sslib_verifies(edited, right) and not in_toto_verifies(edited, right)
        statement = payload(envelope)
        assert statement["_type"] == "https://in-toto.io/Statement/v1"
        schema = json.loads((SCHEMAS / PREDICATES[statement["predicateType"]]).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate(statement["predicate"], schema)

    ship_commit = (repo.counters / "ship-commit").read_text().strip()
    tree = git(repo.root, "rev-parse", f"{ship_commit}^{{tree}}")
    for statement in map(payload, lines[:3]):
        assert statement["subject"] == [
            {"name": "g1/ship-commit", "digest": {"gitCommit": ship_commit}},
            {"name": "g1/ship-commit^{tree}", "digest": {"gitTree": tree}},
        ]
    provenance, tests, run, decision = (payload(e)["predicate"] for e in lines)
    replay = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)
    used = [e for e in replay["events"] if e["type"] == "decision.used"][-1]
    goal_sha = hashlib.sha256((repo.root / "goals" / "g1.yaml").read_bytes()).hexdigest()
    assert decision == {
        "goal": "g1",
        "sha256": goal_sha,
        "decision": "ship",
        "commit": used["data"]["commit"],
        "ledger": used["data"]["ledger"],
    }
    assert payload(lines[3])["subject"][0]["digest"] == {"gitCommit": used["data"]["commit"]}
    key_fp = run["decisions"][0]["fingerprint"]
    _check_provenance(provenance, repo, goal_sha, used["ts"])
    assert run["ledger"]["seq"] == used["seq"] and [d["decision"] for d in run["decisions"]] == [
        "run",
        "ship",
    ]
    assert run["decisions"][1]["fingerprint"] == key_fp  # the owner signed both
    assert tests["configuration"][0]["annotations"]["junit"] == {
        "tests": 3,
        "failures": 0,
        "errors": 0,
        "skipped": 1,
    }
    ship = [e for e in replay["events"] if e["step"] == "ship"]
    assert ship[0]["type"] == "step.started" and ship[0]["data"]["sandbox"] == "bwrap"
    assert ship[-1]["data"]["attestation"] == hashlib.sha256(seen).hexdigest()


def test_attest_after_the_goal_file_changed_describes_the_version_that_ran(
    shipped: tuple[ManagedRepo, str],
) -> None:
    """An owner edits the goal file after it shipped: the bundle still names the goal the
    run was approved under, found in the control ref's history; a history without it is
    refused by name."""
    repo, _ = shipped
    before = repo.harness("attest", "g1", check=0).stdout
    goal_file = repo.root / "goals" / "g1.yaml"
    ran_under = hashlib.sha256(goal_file.read_bytes()).hexdigest()
    goal_file.write_text(goal_file.read_text() + "# edited after it shipped\n")
    git(repo.root, "commit", "-qam", "edit the goal after it shipped")
    after = repo.harness("attest", "g1", check=0).stdout
    assert after == before
    provenance = payload(envelopes(after.encode())[0])["predicate"]
    assert provenance["buildDefinition"]["externalParameters"]["goal"]["sha256"] == ran_under

    # The history rewritten so no commit holds the version that ran.
    git(repo.root, "checkout", "-q", "--orphan", "rewritten")
    git(repo.root, "commit", "-qm", "history without the goal that ran")
    git(repo.root, "branch", "-qf", "main", "rewritten")
    git(repo.root, "checkout", "-q", "main")
    refused = repo.harness("attest", "g1", check=2)
    assert f"goals/g1.yaml: no version with sha256 {ran_under[:12]}… on " in refused.stderr


def test_attest_refuses_an_envelope_no_owner_signed_and_notes_a_missing_one(
    shipped: tuple[ManagedRepo, str], tmp_path: Path
) -> None:
    repo, _ = shipped
    dsse = repo.root / "goals" / "g1.dsse.jsonl"
    honest = dsse.read_bytes()
    # The same statement re-signed by someone else's key (the runner's): not the owner's.
    key = load_runner_key(repo.env)
    assert key is not None
    forged = envelope_line(sign_statement(payload(json.loads(honest)), key.private_key()))
    dsse.write_bytes(forged)
    git(repo.root, "commit", "-qam", "forge the ship decision's envelope")
    refused = repo.harness("attest", "g1", check=3)
    assert "goals/g1.dsse.jsonl: line 1: no signature verifies with a listed key" in refused.stderr
    assert "not the owner's ship decision" in refused.stderr

    dsse.unlink()
    git(repo.root, "commit", "-qam", "no envelope")
    made = repo.harness("attest", "g1", check=0)
    assert len(made.stdout.splitlines()) == 3
    assert "goals/g1.dsse.jsonl: no envelope of the ship decision used" in made.stderr

    # The ship decision's SSHSIG record removed from the approvals: its signer is unknown.
    approval = repo.root / "goals" / "g1.approval"
    approval.write_text(approval.read_text().split("\n\n")[0] + "\n")
    git(repo.root, "commit", "-qam", "rewrite the approvals")
    rewritten = repo.harness("attest", "g1", check=3)
    assert "goals/g1.approval: no record whose signature verifies is the one event " in (
        rewritten.stderr
    )

    without_key = {k: v for k, v in repo.env.items() if k != "HARNESS_RUNNER_KEY_FILE"}
    without_key["XDG_CONFIG_HOME"] = str(tmp_path / "no-key-here")
    no_key = repo.harness("attest", "g1", env=without_key, check=3)
    assert "this machine has no runner key" in no_key.stderr
    assert "harness runner-key new" in no_key.stderr


def test_without_the_attest_extra_the_goal_ships_and_attest_says_how(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    goal = base_goal() | {
        "ship": {
            "run": ["sh", "-c", 'echo "${HARNESS_ATTESTATION:-none}" > "$TEST_COUNTER_DIR/given"']
        }
    }
    repo = managed(goal=goal, mode="fix-on-1")
    key_file = tmp_path / "runner-config" / "runner-key"
    list_runner(repo, "runner-1", key_file)
    repo.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    repo.harness("run", check=0)
    # The extra missing, for real: a securesystemslib that cannot be imported comes first.
    shadow = tmp_path / "shadow" / "securesystemslib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'securesystemslib\'", name="securesystemslib")\n'
    )
    env = repo.env | {"PYTHONPATH": str(shadow.parent)}
    refused = repo.harness("attest", "g1", env=env, check=2)
    assert refused.stderr == (
        "harness: attestations need the attest extra (securesystemslib is not installed): "
        "pip install 'goal-harness[attest]'\n"
    )
    signed = repo.harness("ship", "g1", "--key", str(repo.key.private), env=env, check=0)
    assert "note: no attestation envelope of this decision: " in signed.stdout
    assert repo.status()["status"] == "completed"
    assert not (repo.root / "goals" / "g1.dsse.jsonl").exists()
    assert (repo.counters / "given").read_text() == "none\n"
    replay = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)
    finished = [e for e in replay["events"] if e["type"] == "step.finished" and e["step"] == "ship"]
    assert "attestation" not in finished[-1]["data"]
    assert "pip install 'goal-harness[attest]'" in finished[-1]["data"]["attestation_missing"]
