"""Approval files: records, appending, and finding the run approval."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.errors import InvalidInput, TrustFailure
from harness.trust.approvals import (
    Approval,
    NotApproved,
    SignedRecord,
    append_record,
    find_run_approval,
    format_record,
    load_approval_file,
    parse_approval_file,
    verify_record,
)
from harness.trust.owners import Owner, load_owners, parse_owners
from harness.trust.sshsig import sign
from harness.trust.sshwire import public_key_line
from harness.trust.statement import Statement
from tests.trust.signing import GOAL, NOT_VERIFIED, OWNERS, RUN, SHA, SHIP, Key, ssh_keygen

APPROVAL = "goals/fix-login.approval"
OLD_SHA = hashlib.sha256(b"goal file v1").hexdigest()


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


def test_a_malformed_approval_file_is_named_by_load_and_by_append(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    """Loading it and appending to it both name the file (no record is added to it)."""
    path = tmp_path / "fix-login.approval"
    record = format_record(*signed(RUN, keys["alice"]))
    path.write_text(record + record)  # no blank line between the two
    expected = "record 1: has two signature blocks (expected one blank line between records)"
    with pytest.raises(InvalidInput) as loaded:
        load_approval_file(path, APPROVAL)
    assert str(loaded.value) == f"{APPROVAL}: {expected}"
    with pytest.raises(InvalidInput) as appended:
        append_record(path, *signed(SHIP, keys["alice"]))
    assert str(appended.value) == f"{path}: {expected}"
    assert path.read_text() == record + record


def test_append_record_names_the_file_when_the_new_block_breaks_it(
    keys: dict[str, Key], tmp_path: Path
) -> None:
    path = tmp_path / "fix-login.approval"
    append_record(path, *signed(RUN, keys["alice"]))
    with pytest.raises(InvalidInput) as raised:
        append_record(path, SHIP, "not a signature\n")
    assert str(raised.value).startswith(f"{path}: record 2: ")


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


def test_a_verdict_names_what_its_approval_fixes(
    keys: dict[str, Key], owners: tuple[Owner, ...]
) -> None:
    record = record_of(SHIP, keys["carol"])
    approval = verify_record(record, owners, APPROVAL).approval
    assert approval == Approval(
        goal=GOAL,
        goal_sha256=SHA,
        decision="ship",
        commit=SHIP.commit,
        ledger=SHIP.ledger,
        signers=("carol@example.com",),
        signature_sha256=hashlib.sha256(record.armored.encode()).hexdigest(),
    )


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
# Each refusal and what it means for `harness run`: "waiting" (NotApproved: skipped with a
# note, exit 0) or "refused" (any other TrustFailure: exit 3).
REFUSALS: list[tuple[str, list[tuple[Statement, str]], str, str]] = [
    ("no records", [], "waiting", f"{APPROVAL}: goal fix-login is not approved: {HINT}"),
    (
        "only a ship decision",
        [(SHIP, "alice")],
        "waiting",
        f"{APPROVAL}: goal fix-login is not approved: {HINT}",
    ),
    (
        "goal file changed",
        [(Statement(GOAL, OLD_SHA, "run"), "alice")],
        "waiting",
        f"{APPROVAL}: the goal file changed after it was approved (approved sha256 "
        f"{OLD_SHA[:12]}…, file is {SHA[:12]}…): re-approve with "
        "`harness approve fix-login --key PRIVKEY`",
    ),
    (
        # Waiting for re-approval only if the old approval was genuinely an owner's.
        "goal file changed since a forged approval",
        [(Statement(GOAL, OLD_SHA, "run"), "bob")],
        "refused",
        f"{APPROVAL}: record 1: signed by a key that is not in .harness/owners (BOB)",
    ),
    (
        "another goal",
        [(Statement("other-goal", SHA, "run"), "alice")],
        "refused",
        f"{APPROVAL}: goal fix-login is not approved: record 1 is for goal other-goal, "
        f"not fix-login; {HINT}",
    ),
    (
        "another goal's record beside this goal's old one",
        [
            (Statement(GOAL, OLD_SHA, "run"), "alice"),
            (Statement("other-goal", SHA, "run"), "alice"),
        ],
        "refused",
        f"{APPROVAL}: goal fix-login is not approved: record 2 is for goal other-goal, "
        f"not fix-login; {HINT}",
    ),
    (
        "signed by a non-owner",
        [(RUN, "bob")],
        "refused",
        f"{APPROVAL}: record 1: signed by a key that is not in .harness/owners (BOB)",
    ),
]


@pytest.mark.parametrize(
    ("records", "outcome", "message"),
    [case[1:] for case in REFUSALS],
    ids=[case[0] for case in REFUSALS],
)
def test_find_run_approval_refuses_with_the_most_helpful_reason(
    keys: dict[str, Key],
    owners: tuple[Owner, ...],
    records: list[tuple[Statement, str]],
    outcome: str,
    message: str,
) -> None:
    built = [record_of(st, keys[who], i) for i, (st, who) in enumerate(records, 1)]
    with pytest.raises(TrustFailure) as raised:
        find_run_approval(built, owners, GOAL, SHA, APPROVAL)
    assert str(raised.value) == message.replace("BOB", public_key_line(keys["bob"].blob))
    assert isinstance(raised.value, NotApproved) == (outcome == "waiting")


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
