"""One sanitiser for everything a human reads (issue 13, done-when 6): no raw control,
escape, bidi or line-breaking character from step output reaches any output, and no field
can start a new line. Property tests over random code points, then the outputs that use it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.record.cell import Cell
from harness.record.ledger import Event, Record
from harness.record.render import MarkdownReport, json_event, text_line
from harness.record.report.safe import esc
from harness.record.visible import CONTINUED, block, line, lines, one_line

# Every code point, surrogates included (a JSON ledger line can carry a lone one), with
# the characters the issue names drawn often.
HOSTILE = "\x1b\x9b\x85\u2028\u2029\u202e\u2066\u2069\u200f\u061c\n\r\t\x00\x07\x7f"
# Where a line must not start, once GitHub has trimmed its spaces: a workflow command, or
# a forged line of the harness's own (tests/attacks/test_raw_output.py prints this one).
RAW_LINE_STARTS = ("::", "harness: g1: shipped ok")
# Text built of the pieces a CI log acts on: `::` and `##[` anywhere, newlines, spaces.
COMMANDS = st.lists(
    st.sampled_from(["::", "##[", "#", "[", ":", " ", "\n", "harness: g1: shipped ok", "x"]),
    max_size=12,
).map("".join)
TEXT = st.text(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
        st.sampled_from(HOSTILE),
    ),
    max_size=60,
)


def _visible_only(text: str, allowed: str = "") -> bool:
    return all(c.isprintable() or c in allowed for c in text)


@given(TEXT)
def test_one_line_leaves_only_printable_characters(text: str) -> None:
    shown = one_line(text)
    assert _visible_only(shown)
    # Printable text is kept as it is, but for a CI log's command sequence `##[`.
    assert shown == text if text.isprintable() and "##[" not in text else shown != text


def test_printable_text_that_holds_a_ci_command_is_still_changed() -> None:
    """The example hypothesis found once: printable, yet `##[` would start a command."""
    assert one_line("##[") != "##[" and "##[" not in one_line("##[")


@given(TEXT)
def test_block_keeps_only_newlines_and_tabs(text: str) -> None:
    assert _visible_only(block(text), "\n\t")


def _event(text: str, seq: int = 3) -> Event:
    data = {"exit_code": 1, "duration_s": 0.5, "result": "fail", "failing_test": text}
    return Event(seq, "2030-01-01T00:00:00.000Z", "step.finished", "g1", "judge", 1, data, "0")


def _gated(text: str) -> Event:
    data = {"status": "needs_attention", "reason": "tamper", "detail": text, "commit": "c"}
    return Event(4, "2030-01-01T00:00:01.000Z", "goal.gated", "g1", None, 1, data, "0")


@given(TEXT)
def test_an_event_line_is_one_line_whatever_the_output(text: str) -> None:
    for event in (_event(text), _gated(text)):
        line = text_line(event)
        assert line.endswith("\n") and line.count("\n") == 1
        assert _visible_only(line[:-1])
        assert line.startswith(f"{event.ts} g1 #{event.seq} ")


@given(TEXT, TEXT)
def test_the_report_and_the_page_show_no_raw_control(failing: str, detail: str) -> None:
    report = MarkdownReport("g1")
    report.add(_event(failing))
    report.add(_gated(detail))
    cell = Cell(goal="g1", failing_test=failing, gate_detail=detail)
    page = report.render(cell)
    assert _visible_only(page, "\n")
    # A table row per field: the hostile fields cannot add a row or a line.
    assert page.count("\n") == report.render(Cell(goal="g1", failing_test="x")).count("\n")
    assert _visible_only(esc(failing + detail), "\n\t")


@given(TEXT)
def test_replay_json_is_ascii_and_keeps_the_value(text: str) -> None:
    line = json_event(Record(_event(text), "h", "000001.jsonl", 3, 0))
    assert line.isascii() and b"\n" not in line
    assert json.loads(line)["data"]["failing_test"] == text


def test_the_named_characters_are_shown_as_escapes() -> None:
    assert one_line("a\x1b]0;owned\x07b") == "a\\x1b]0;owned\\x07b"
    assert one_line("\x9b31m \u202eevil\u2066 \u2028\u2029\x85") == (
        "\\x9b31m \\u202eevil\\u2066 \\u2028\\u2029\\x85"
    )
    assert one_line("x\ng2 completed") == "x\\ng2 completed"
    assert block("line 1\nline\t2\r") == "line 1\nline\t2\\r"
    assert one_line("\U000e0001\ud800") == "\\U000e0001\\ud800"


@given(st.one_of(TEXT, COMMANDS))
def test_no_sanitised_text_holds_a_legacy_workflow_command(text: str) -> None:
    for shown in (one_line(text), block(text), line(text), lines(text)):
        assert "##[" not in shown


@given(st.one_of(TEXT, COMMANDS))
def test_a_line_is_one_line_that_starts_no_workflow_command(text: str) -> None:
    shown = line(text)
    assert shown.endswith("\n") and shown.count("\n") == 1
    assert _visible_only(shown[:-1])
    assert not shown.lstrip().startswith("::")


@given(st.one_of(TEXT, COMMANDS))
def test_a_message_over_lines_continues_each_line(text: str) -> None:
    # A message starts with the harness's own words; what follows them may be anything.
    shown = lines(f"the ship step failed: {text}").split("\n")
    assert shown[-1] == ""  # every line ends with its newline
    first, *rest = shown[:-1]
    assert len(rest) == text.rstrip("\n").count("\n")
    assert first.startswith("the ship step failed: ")
    assert all(more.startswith(CONTINUED) and _visible_only(more) for more in rest)
    assert not any(row.lstrip().startswith(RAW_LINE_STARTS) for row in shown)


def test_workflow_commands_and_forged_lines_are_shown_inert() -> None:
    assert one_line("see ##[error]x") == "see #\\x23[error]x"
    assert line("::add-mask::x") == "\\x3a:add-mask::x\n"
    assert line("  ::error::x") == "  \\x3a:error::x\n"
    assert lines("failed: 1\nharness: g1: shipped ok\n::error::forged\n") == (
        "failed: 1\n  | harness: g1: shipped ok\n  | ::error::forged\n"
    )
