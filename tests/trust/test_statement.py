"""Approval statements: their exact bytes and the strict parser."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import InvalidInput
from harness.trust.statement import Statement
from tests.trust.signing import COMMIT, GOAL, LEDGER, RUN, SHA, SHIP

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
        "line 1: written by a newer goal-harness (format 2): upgrade goal-harness to read it "
        "(expected 'harness-approval v1')",
    ),
    (
        replaced(RUN_LINES, 0, "harness-approval v0"),
        "line 1: first line is 'harness-approval v0' (expected 'harness-approval v1')",
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
