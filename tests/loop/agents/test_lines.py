"""agents.lines and every parser: any split of a stream gives the same Usage, memory bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.loop.agents import make_parser, parse_output
from harness.loop.agents.lines import LineStream
from tests.loop.agents.captures import all_outputs, capture

OUTPUTS = all_outputs()


def _fed(fmt: str, data: bytes, cuts: list[int]) -> object:
    parser = make_parser(fmt)
    start = 0
    for cut in sorted(set(cuts)):
        parser.feed(data[start:cut])
        start = cut
    parser.feed(data[start:])
    return parser.finish()


@pytest.mark.parametrize(("fmt", "path"), OUTPUTS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_split_gives_the_same_usage(fmt: str, path: str, data: st.DataObject) -> None:
    raw = capture(*path.split("/"))
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=40))
    assert _fed(fmt, raw, cuts) == parse_output(fmt, raw.decode())


@pytest.mark.parametrize(("fmt", "path"), OUTPUTS)
def test_byte_by_byte_gives_the_same_usage(fmt: str, path: str) -> None:
    raw = capture(*path.split("/"))
    assert _fed(fmt, raw, list(range(len(raw)))) == parse_output(fmt, raw.decode())


class _Lines(LineStream):
    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.seen: list[str] = []

    def line(self, text: str) -> None:
        self.seen.append(text)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab\né\r", max_size=60),
    cuts=st.lists(st.integers(0, 80), max_size=10),
)
def test_lines_over_the_cap_are_dropped_however_they_arrive(text: str, cuts: list[int]) -> None:
    raw = text.encode()
    stream = _Lines(limit=8)
    start = 0
    for cut in sorted(set(c for c in cuts if c <= len(raw))):
        stream.feed(raw[start:cut])
        start = cut
    stream.feed(raw[start:])
    stream.close()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    kept = [line.decode().rstrip("\r") for line in lines if len(line) <= 8]
    assert stream.seen == kept
    assert stream.dropped == sum(1 for line in lines if len(line) > 8)


def test_an_overlong_line_is_named_and_memory_stays_bounded() -> None:
    stream = make_parser("codex-jsonl")
    stream.feed(b'{"type":"thread.started","thread_id":"t1"}\n')
    chunk = b"x" * 1_000_000
    for _ in range(12):  # 12 MB on one line, over the 8 MiB cap
        stream.feed(chunk)
        assert len(stream._buf) <= stream.limit
    stream.feed(b'\n{"type":"turn.completed","usage":{"input_tokens":5}}\n')
    usage = stream.finish()
    assert (usage.session, usage.turns, usage.tokens) == ("t1", 1, (5, 0, 0))
    assert usage.error == "codex-jsonl: 1 output line(s) over 8388608 bytes skipped"


def test_codex_output_over_a_mebibyte_keeps_its_thread() -> None:
    # The old tail parser lost thread.started past 1 MiB and counted a resumed thread twice.
    head = b'{"type":"thread.started","thread_id":"t9"}\n{"type":"turn.started"}\n'
    item = (
        b'{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"'
        + b"y" * 1000
        + b'"}}\n'
    )
    tail = b'{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":0,"output_tokens":1}}\n'
    parser = make_parser("codex-jsonl")
    parser.feed(head)
    for _ in range(2000):
        parser.feed(item)
    parser.feed(tail)
    usage = parser.finish()
    assert (usage.session, usage.turns, usage.tokens) == ("t9", 1, (7, 0, 1))
