"""Approval statements: what an owner signs, one decision about one goal file's bytes.

A statement is a few fixed lines under the header `harness-approval v1`; its bytes are the
signed message, so parsing is strict and accepts exactly what `Statement.to_bytes` writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import invalid
from harness.trust.problem import Problem, quote

STATEMENT_HEADER = "harness-approval v1"
_NEWER_HEADER = re.compile(r"harness-approval v([1-9][0-9]{0,8})")

_WORD = r"[a-z][a-z0-9_]*"
_BUDGET_ITEM = rf"{_WORD}=[0-9][0-9a-z.]*"
# Every decision form, and whether it must be bound to a commit and a ledger head. A new form
# is one more entry here.
_DECISIONS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile("run"), False),
    (re.compile("ship"), True),
    (re.compile(rf"unpark {_WORD}(?::{_WORD})?"), True),
    (re.compile(rf"extend-budget {_BUDGET_ITEM}(?:,{_BUDGET_ITEM})*"), True),
    # Accepts a new owners file (by its SHA-256) for this goal: signed by a pinned owner.
    (re.compile(r"rotate-owners [0-9a-f]{64}"), False),
)
_DECISION_FORMS = (
    "run, ship, unpark <gate>, extend-budget <key>=<value>,... or rotate-owners <sha256>"
)
_VALUE_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "goal": (re.compile(r"[a-z0-9][a-z0-9-]{0,62}"), "^[a-z0-9][a-z0-9-]{0,62}$"),
    "sha256": (re.compile(r"[0-9a-f]{64}"), "64 lowercase hex digits"),
    "commit": (re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}"), "40 (or 64) lowercase hex digits"),
    "ledger": (re.compile(r"(?:0|[1-9][0-9]*):[0-9a-f]{64}"), "<seq>:<64 lowercase hex digits>"),
}
_LINE_NAMES = ("goal", "sha256", "decision", "commit", "ledger")
_BINDING = "commit <sha> and ledger <seq>:<hash> lines after the decision"


def _decision_is_bound(decision: str) -> bool:
    """Whether this decision must carry commit and ledger lines; refuses unknown forms."""
    for pattern, bound in _DECISIONS:
        if pattern.fullmatch(decision):
            _refuse_duplicate_budget_keys(decision)
            return bound
    raise Problem(f"decision {quote(decision)} is not valid", _DECISION_FORMS)


def _refuse_duplicate_budget_keys(decision: str) -> None:
    # `a=1,a=2` would leave the reader to pick one; an approval must mean one thing.
    if not decision.startswith("extend-budget "):
        return
    keys = [item.split("=")[0] for item in decision.removeprefix("extend-budget ").split(",")]
    if len(set(keys)) != len(keys):
        raise Problem(f"decision {quote(decision)} repeats a key", "each budget key once")


def _check_value(name: str, value: str) -> None:
    if name == "decision":
        _decision_is_bound(value)
        return
    pattern, expected = _VALUE_FORMS[name]
    if not pattern.fullmatch(value):
        raise Problem(f"{name} {quote(value)} is not valid", expected)


def _check_binding(decision: str, bound: bool) -> None:
    needs_binding = _decision_is_bound(decision)
    if needs_binding and not bound:
        raise Problem(f"decision {decision} needs commit and ledger lines", _BINDING)
    if bound and not needs_binding:
        raise Problem(f"decision {decision} must not carry commit and ledger lines")


@dataclass(frozen=True)
class Statement:
    """What an owner signs: one decision about one goal file's exact bytes."""

    goal: str
    sha256: str
    decision: str
    commit: str | None = None
    ledger: str | None = None

    def __post_init__(self) -> None:
        if (self.commit is None) != (self.ledger is None):
            raise invalid("statement", "ledger", "commit and ledger go together", _BINDING)
        for name, line in zip(_LINE_NAMES, self._lines()[1:], strict=False):
            try:
                _check_value(name, line.removeprefix(name + " "))
            except Problem as problem:
                raise invalid("statement", name, problem.problem, problem.expected) from None
        try:
            _check_binding(self.decision, self.commit is not None)
        except Problem as problem:
            raise invalid("statement", "decision", problem.problem, problem.expected) from None

    def _lines(self) -> list[str]:
        lines = [STATEMENT_HEADER, f"goal {self.goal}", f"sha256 {self.sha256}"]
        lines.append(f"decision {self.decision}")
        if self.commit is not None:
            lines += [f"commit {self.commit}", f"ledger {self.ledger}"]
        return lines

    def to_bytes(self) -> bytes:
        return "".join(line + "\n" for line in self._lines()).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes, source: str) -> Statement:
        """Strict: exactly the bytes to_bytes() would write, or InvalidInput."""
        try:
            values = _statement_values(_statement_lines(data))
        except Problem as problem:
            raise invalid(source, problem.key, problem.problem, problem.expected) from None
        return cls(
            goal=values["goal"],
            sha256=values["sha256"],
            decision=values["decision"],
            commit=values.get("commit"),
            ledger=values.get("ledger"),
        )


def _statement_lines(data: bytes) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem("statement is not UTF-8 text") from None
    if not text.endswith("\n"):
        raise Problem("statement does not end with a newline", "a newline after every line")
    return text[:-1].split("\n")


def _statement_values(lines: list[str]) -> dict[str, str]:
    newer = _NEWER_HEADER.fullmatch(lines[0])
    if newer and int(newer[1]) > 1:  # the version first (record/formats.py)
        raise Problem(
            f"written by a newer goal-harness (format {int(newer[1])}): upgrade goal-harness to "
            "read it",
            repr(STATEMENT_HEADER),
            "line 1",
        )
    if lines[0] != STATEMENT_HEADER:
        raise Problem(f"first line is {quote(lines[0])}", repr(STATEMENT_HEADER), "line 1")
    if len(lines) not in (4, 6):
        raise Problem(f"statement has {len(lines)} lines", f"4, or 6 with {_BINDING}")
    values: dict[str, str] = {}
    for number, (name, line) in enumerate(zip(_LINE_NAMES, lines[1:], strict=False), start=2):
        key = f"line {number}"
        if not line.startswith(name + " "):
            raise Problem(f"line is {quote(line)}", f"{name} <value>", key)
        values[name] = line[len(name) + 1 :]
        try:
            _check_value(name, values[name])
        except Problem as problem:
            raise Problem(problem.problem, problem.expected, key) from None
    try:
        _check_binding(values["decision"], "commit" in values)
    except Problem as problem:
        raise Problem(problem.problem, problem.expected, "line 4") from None
    return values
