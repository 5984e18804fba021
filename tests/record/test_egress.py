"""A step's egress in words (record/egress.py): the run's line, report.md's table, the gate's
detail. The hosts are the step's own strings and the data comes from a ledger: nothing in
it can forge a line or break a table, and a malformed entry is shown, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from harness.record.egress import denied_detail, markdown, summary
from harness.record.ledger import Event
from harness.record.render import containment, text_line


def _entry(host: str, verdict: str, count: int = 1, **more: Any) -> dict[str, Any]:
    base = {"host": host, "port": 443, "verdict": verdict, "count": count}
    return base | {"sent": 0, "received": 0} | more


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({}, None),  # no allowlist, or a record from before egress by name
        ({"egress": []}, "egress: none"),
        ({"egress": [_entry("api.example.com", "allowed", 3)]}, "egress: 3 allowed"),
        (
            {"egress": [_entry("api.example.com", "allowed", 3), _entry("evil.example", "denied")]},
            "egress: 3 allowed, 1 denied: evil.example",
        ),
        (
            {"egress": [_entry(f"e{n}.example", "denied") for n in range(4)]},
            "egress: 0 allowed, 4 denied: e0.example, e1.example, e2.example, …",
        ),
        (
            {"egress": [_entry("a.example", "allowed")], "egress_more": {"denied": 7}},
            "egress: 1 allowed, 7 denied",
        ),
        (
            {"egress": [], "egress_error": "the egress proxy ended early (exit -9)"},
            "egress: not recorded (the egress proxy ended early (exit -9))",
        ),
        # malformed: not a list of mappings, counts that are not counts
        ({"egress": ["x", 3, {"verdict": "denied", "count": "9"}]}, "egress: none"),
        ({"egress": "evil"}, None),
    ],
)
def test_the_summary(data: dict[str, Any], said: str | None) -> None:
    assert summary(data) == said


def test_a_hostile_host_cannot_make_a_second_line_or_a_table_cell() -> None:
    host = "evil\n2026-01-01T00:00:00.000Z g1 #9 completed\x1b[2J|x"
    data = {"call_id": "c", "exit_code": 0, "timed_out": False, "duration_s": 1.0}
    data |= {"output_tail": "", "egress": [_entry(host, "denied", why="a\nb|c")]}
    event = Event(5, "2026-11-30T01:00:00.000Z", "step.finished", "g1", "judge", 1, data, "")
    line = text_line(event)
    assert line.count("\n") == 1 and "\x1b" not in line
    assert line.endswith("1 denied: evil\\n2026-01-01T00:00:00.000Z g1 #9 completed\\x1b[2J|x\n")
    table = markdown("judge[1]", data)
    [row] = [row for row in table.splitlines() if row.startswith("| evil")]
    assert row.count(" | ") == 4 and "\\|x:443" in row and "a\\nb\\|c" in row
    assert table.splitlines()[0].endswith("\\x1b[2J\\|x")  # the heading's, too
    detail = denied_detail("judge", 1, data)
    assert detail is not None and "\n" not in detail


def test_the_gate_detail_names_what_was_denied() -> None:
    data = {
        "egress": [_entry("a.example", "allowed"), _entry("evil.example", "denied", 2, why="w")]
    }
    assert denied_detail("build", 2, data) == (
        "build[2] tried to reach what its network allowlist does not name: evil.example:443 ×2 (w)"
    )
    assert denied_detail("build", 2, {"egress": [_entry("a.example", "allowed")]}) is None
    assert denied_detail("build", 2, {"egress": [], "egress_more": {"denied": 1}}) is not None


def test_a_step_with_an_allowlist_is_named_apart() -> None:
    assert containment({"sandbox": "bwrap", "network": "allowlist"}) == (
        "contained (bwrap), network by allowlist"
    )
    data = {"call_id": "c", "base": "b", "sandbox": "bwrap", "network": "allowlist"}
    event = Event(2, "2026-11-30T01:00:00.000Z", "step.started", "g1", "build", 1, data, "")
    assert text_line(event).endswith(" build[1] started (network: allowlist)\n")
