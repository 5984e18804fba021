"""The ledger: canonical lines, chain, MACs, segments and torn tails."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.record.ledger import Ledger, LedgerBroken
from harness.record.position import GENESIS, Position

KEY = b"k" * 32


def _ledger(
    tmp_path: Path, key: bytes = KEY, segment_bytes: int = 8 * 1024 * 1024, goal: str = "g1"
) -> Ledger:
    ledger = Ledger(tmp_path / "events", goal, key, segment_bytes)
    ledger.load()
    return ledger


def _fill(ledger: Ledger, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        ledger.append("step.started", "build", i, {"call_id": f"c{i}", "base": "0" * 40}, f"t{i}")


def test_lines_are_canonical_and_chained(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, 3)
    lines = (tmp_path / "events" / "000001.jsonl").read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    assert first["e"]["prev"] == GENESIS and first["e"]["seq"] == 1
    assert json.loads(lines[1])["e"]["prev"] == hashlib.sha256(lines[0]).hexdigest()
    for line in lines:
        raw = json.loads(line)
        canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert line == canonical.encode() + b"\n"
    assert ledger.head == Position(3, hashlib.sha256(lines[2]).hexdigest())


def test_reader_returns_what_was_written(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, 5)
    again = Ledger(tmp_path / "events", "g1", KEY)
    records = again.load()
    assert [r.event.seq for r in records] == [1, 2, 3, 4, 5]
    assert records[2].event.data == {"call_id": "c3", "base": "0" * 40}
    assert again.head == ledger.head


def test_wrong_key_fails_at_line_one(tmp_path: Path) -> None:
    _fill(_ledger(tmp_path), 2)
    with pytest.raises(LedgerBroken, match="line 1: MAC does not match"):
        Ledger(tmp_path / "events", "g1", b"x" * 32).load()


def test_line_from_another_goal_is_refused(tmp_path: Path) -> None:
    _fill(_ledger(tmp_path, goal="other"), 1)
    with pytest.raises(LedgerBroken, match="belongs to goal 'other'"):
        Ledger(tmp_path / "events", "g1", KEY).load()


def test_segments_close_at_the_limit_and_chain_across(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, segment_bytes=600)
    _fill(ledger, 12)
    names = sorted(p.name for p in (tmp_path / "events").iterdir())
    assert len(names) > 2 and names[0] == "000001.jsonl"
    assert all((tmp_path / "events" / n).stat().st_size <= 600 for n in names)
    reread = Ledger(tmp_path / "events", "g1", KEY)
    assert [r.event.seq for r in reread.load()] == list(range(1, 13))
    _fill(reread, 1, start=13)
    assert [r.event.seq for r in Ledger(tmp_path / "events", "g1", KEY).load()][-1] == 13


def test_missing_segment_is_refused(tmp_path: Path) -> None:
    _fill(_ledger(tmp_path, segment_bytes=600), 12)
    (tmp_path / "events" / "000002.jsonl").unlink()
    with pytest.raises(LedgerBroken, match="unexpected segment name"):
        Ledger(tmp_path / "events", "g1", KEY).load()


def _one_line(tmp_path: Path, key: bytes = KEY, **changes: object) -> Path:
    import hmac

    event = {
        "v": 1,
        "seq": 1,
        "ts": "t",
        "type": "x",
        "goal": "g1",
        "step": None,
        "iter": 0,
        "data": {},
        "prev": GENESIS,
    } | changes
    body = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    mac = hmac.new(key, b"harness-event\x00" + body, hashlib.sha256).hexdigest().encode()
    (tmp_path / "events").mkdir()
    segment = tmp_path / "events" / "000001.jsonl"
    segment.write_bytes(b'{"e":' + body + b',"mac":"' + mac + b'"}\n')
    return segment


NEWER = "written by a newer goal-harness \\(format {}\\): upgrade goal-harness to read it"


@pytest.mark.parametrize(
    ("key", "changes", "problem"),
    [
        # A newer line is named by its version before its MAC, shape or fields are checked.
        (KEY, {"v": 2}, NEWER.format(2) + " \\(this one reads ledger format 1\\)"),
        (b"another key" * 3, {"v": 3, "sig": "x"}, NEWER.format(3)),
        (KEY, {"v": 0}, "unknown ledger format version 0 \\(this harness reads version 1\\)"),
        (KEY, {"v": "2"}, "unknown ledger format version '2'"),
        # MAC'd, so written by a harness: a newer one that added a field within format 1.
        (
            KEY,
            {"checkpoint": "x"},
            "the event holds field\\(s\\) this goal-harness does not know \\(checkpoint\\): "
            + NEWER.format(1),
        ),
    ],
)
def test_the_format_version_is_checked_first_and_a_newer_one_named(
    tmp_path: Path, key: bytes, changes: dict[str, object], problem: str
) -> None:
    segment = _one_line(tmp_path, key, **changes)
    with pytest.raises(LedgerBroken, match=f"{segment}: line 1: {problem}"):
        Ledger(tmp_path / "events", "g1", KEY).load()


def test_a_line_missing_a_field_is_broken_not_newer(tmp_path: Path) -> None:
    import hmac

    body = b'{"goal":"g1","seq":1,"v":1}'
    mac = hmac.new(KEY, b"harness-event\x00" + body, hashlib.sha256).hexdigest().encode()
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "000001.jsonl").write_bytes(
        b'{"e":' + body + b',"mac":"' + mac + b'"}\n'
    )
    with pytest.raises(LedgerBroken, match="event does not have the ledger's fields"):
        Ledger(tmp_path / "events", "g1", KEY).load()


def test_torn_tail_at_every_offset_is_cut_back(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, 2)
    path = tmp_path / "events" / "000001.jsonl"
    whole = path.read_bytes()
    _fill(ledger, 1, start=3)
    last = path.read_bytes()[len(whole) :]
    for cut in range(1, len(last)):
        path.write_bytes(whole + last[:cut])
        reader = Ledger(tmp_path / "events", "g1", KEY)
        assert [r.event.seq for r in reader.load()] == [1, 2]
        assert reader.torn is not None and reader.torn.length == cut
        reader.cut_torn_tail()
        assert path.read_bytes() == whole
        _fill(reader, 1, start=3)
        assert path.read_bytes() == whole + last  # the same event, written whole


def test_corrupt_line_before_the_last_is_refused(tmp_path: Path) -> None:
    _fill(_ledger(tmp_path), 3)
    path = tmp_path / "events" / "000001.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1][:-5] + b"\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(LedgerBroken, match="line 2: not a ledger line"):
        Ledger(tmp_path / "events", "g1", KEY).load()


def test_an_edited_event_is_named_by_its_segment_and_line_in_any_segment(tmp_path: Path) -> None:
    """What `verify --json` reports: the exact segment and line, across many segments (the
    1,000,000-event case is checked by scripts/bench on every run of verify_1m)."""
    _fill(_ledger(tmp_path, segment_bytes=2000), 300)
    segments = sorted((tmp_path / "events").iterdir())
    assert len(segments) > 40
    for segment in (segments[0], segments[len(segments) // 2], segments[-1]):
        original = segment.read_bytes()
        lines = original.splitlines(keepends=True)
        for line_no in (1, len(lines)):
            edited = list(lines)
            edited[line_no - 1] = edited[line_no - 1].replace(b'"ts":"t', b'"ts":"T', 1)
            segment.write_bytes(b"".join(edited))
            with pytest.raises(LedgerBroken) as caught:
                Ledger(tmp_path / "events", "g1", KEY).load()
            assert (Path(caught.value.path).name, caught.value.line) == (segment.name, line_no)
            assert "MAC does not match" in str(caught.value)
        segment.write_bytes(original)
    assert len(Ledger(tmp_path / "events", "g1", KEY).load()) == 300


def test_oversized_event_data_is_an_internal_error(tmp_path: Path) -> None:
    from harness.errors import HarnessError

    ledger = _ledger(tmp_path)
    with pytest.raises(HarnessError, match="exceeds"):
        ledger.append("x", None, 0, {"blob": "a" * 70_000}, "t")
    assert not (tmp_path / "events" / "000001.jsonl").exists()


# ---- the fast path agrees with the strict one ------------------------------------------

_BASE_EVENT = {
    "v": 1,
    "seq": 1,
    "ts": "2026-11-29T08:00:00.000Z",
    "type": "step.started",
    "goal": "g1",
    "step": "build",
    "iter": 1,
    "data": {"call_id": "c1", "note": "é ☃"},
    "prev": GENESIS,
}
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.just(GENESIS),
    st.just("g1"),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(0, 2), max_size=2),
)
_SERIALIZATIONS = (
    lambda e: json.dumps(e, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    lambda e: json.dumps(e, sort_keys=True, separators=(",", ":")),  # \u escapes
    lambda e: json.dumps(e),  # spaces, insertion order
    lambda e: " " + json.dumps(e, separators=(",", ":")) + " ",
    lambda e: "\ufeff" + json.dumps(e, separators=(",", ":")),
)


def _signed_line(body: bytes) -> bytes:
    """A line whose MAC is valid for any body: what a holder of the key could write."""
    mac = hmac.new(KEY, b"harness-event\x00" + body, hashlib.sha256).hexdigest().encode()
    return b'{"e":' + body + b',"mac":"' + mac + b'"}\n'


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=st.dictionaries(st.sampled_from([*_BASE_EVENT, "extra"]), _VALUES, max_size=2),
    dropped=st.sets(st.sampled_from(list(_BASE_EVENT)), max_size=1),
    serialize=st.sampled_from(_SERIALIZATIONS),
    encoding=st.sampled_from(["utf-8", "utf-16"]),
    flip=st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(0, 255))),
)
def test_the_fast_path_accepts_only_what_the_strict_path_accepts_and_reads_it_alike(
    tmp_path_factory: pytest.TempPathFactory,
    changes: dict[str, object],
    dropped: set[str],
    serialize: Callable[[dict[str, object]], str],
    encoding: str,
    flip: tuple[int, int] | None,
) -> None:
    """Ledger._accept (the fast path) may decline a line, but must never accept one that
    Ledger._verify refuses, nor read an accepted one differently. Lines are made by a key
    holder (valid MACs over odd bodies) and, optionally, then damaged in one byte."""
    event = {k: v for k, v in {**_BASE_EVENT, **changes}.items() if k not in dropped}
    try:
        body = serialize(event).encode(encoding)
    except (ValueError, UnicodeEncodeError):
        return
    line = _signed_line(body)
    if flip is not None:
        at = flip[0] % len(line)
        line = line[:at] + bytes([flip[1]]) + line[at + 1 :]
    folder = tmp_path_factory.mktemp("fast")
    ledger = Ledger(folder / "events", "g1", KEY)
    fast = ledger._accept(line, "000001.jsonl", 1, 0, GENESIS, len(line))
    try:
        strict = ledger._verify(line, folder / "000001.jsonl", 1, Position(0, GENESIS), len(line))
    except LedgerBroken:
        assert fast is None
        return
    assert fast is None or fast == strict


def test_a_segment_that_is_a_link_is_a_broken_ledger(tmp_path: Path) -> None:
    """Read without following links (issue 13): a planted link is refused, not read."""
    folder = tmp_path / "events"
    ledger = Ledger(folder, "g1", b"k" * 32)
    list(ledger.records())
    ledger.append("goal.resumed", None, 0, {"runner": "r"}, "2030-01-01T00:00:00.000Z")
    segment = folder / "000001.jsonl"
    outside = tmp_path / "outside.jsonl"
    segment.rename(outside)
    segment.symlink_to(outside)
    with pytest.raises(LedgerBroken, match=r"000001\.jsonl: line 0: is a link"):
        list(Ledger(folder, "g1", b"k" * 32).records())


def test_a_ledger_not_read_yet_or_with_a_torn_tail_refuses_to_append(tmp_path: Path) -> None:
    """An append builds on the head it has verified: never on an unread ledger (its head
    would be the genesis, forking the chain) nor past a torn line (found by mutmut)."""
    _fill(_ledger(tmp_path), 2)
    unread = Ledger(tmp_path / "events", "g1", KEY)
    with pytest.raises(HarnessError, match="ledger appended before it was verified"):
        unread.append("step.started", "build", 3, {"call_id": "c3", "base": "0" * 40}, "t3")
    with (tmp_path / "events" / "000001.jsonl").open("ab") as segment:
        segment.write(b'{"e":{"seq":3')  # a power cut mid-line
    torn = Ledger(tmp_path / "events", "g1", KEY)
    torn.load()
    assert torn.torn is not None
    with pytest.raises(HarnessError, match="ledger appended before it was verified"):
        torn.append("step.started", "build", 3, {"call_id": "c3", "base": "0" * 40}, "t3")
    torn.cut_torn_tail()
    again = Ledger(tmp_path / "events", "g1", KEY)
    again.load()
    assert again.torn is None and again.head.seq == 2


def test_what_append_returns_is_what_a_reader_reads(tmp_path: Path) -> None:
    """The record live rendering sees (segment, line, end offset, run) is the one replay
    reads back, across a segment boundary (found by mutmut: nothing compared them)."""
    ledger = _ledger(tmp_path, segment_bytes=700)
    written = [
        ledger.append("step.started", "build", i, {"call_id": f"c{i}", "base": "0" * 40}, "t")
        for i in range(1, 4)
    ]
    run_2 = {"run": 2, "control_commit": "c" * 40, "due_at": "2030-01-01T00:00:02.000Z"}
    written.append(ledger.append("run.started", None, 1, run_2, "t"))
    written.append(ledger.append("goal.completed", None, 1, {"commit": "b" * 40}, "t"))
    assert len({r.segment for r in written}) > 1
    assert [r.event.run for r in written] == [1, 1, 1, 2, 2]
    read = Ledger(tmp_path / "events", "g1", KEY).load()
    assert [(r.segment, r.line, r.end, r.hash, r.event) for r in written] == [
        (r.segment, r.line, r.end, r.hash, r.event) for r in read
    ]
