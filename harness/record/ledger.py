"""The append-only, hash-chained, MAC'd event ledger of one goal.

A line is `{"e":<event>,"mac":"<hex>"}` followed by a newline, where `<event>` is the
canonical JSON of the event and the MAC is HMAC-SHA256 over a domain tag and those exact
bytes. Keeping the MAC outside the event lets a reader check it on the raw bytes it read,
with no re-serialising. Each event names the SHA-256 of the previous line (newline
included); the first names GENESIS.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, TrustFailure
from harness.record.formats import is_newer, newer_text, unknown_keys
from harness.record.position import START, Position
from harness.store.fsutil import append_line, canonical_json, fsync_dir

FORMAT_VERSION = 1
SEGMENT_BYTES = 8 * 1024 * 1024
MAX_DATA_BYTES = 64 * 1024
EVENT_KEYS = frozenset({"v", "seq", "ts", "type", "goal", "step", "iter", "data", "prev"})
# An event of a recurring goal's run N ≥ 2 also carries `run` (absent: run 1).
RUN_EVENT_KEYS = EVENT_KEYS | {"run"}
RUN_STARTED = "run.started"
_MAC_TAG = b"harness-event\x00"
_HEAD = b'{"e":'
_MAC_OPEN = b',"mac":"'
_TAIL = b'"}\n'
_TRAILER = len(_MAC_OPEN) + 64 + len(_TAIL)
_MAC_START, _MAC_END = -_TRAILER + len(_MAC_OPEN), -len(_TAIL)
# Segments are read in large blocks: fewer system calls per line, still a bounded amount.
_READ_BUFFER = 1024 * 1024
_raw_decode = json.JSONDecoder().raw_decode
_new, _set_attr = object.__new__, object.__setattr__


@dataclass(frozen=True)
class Event:
    seq: int
    ts: str
    type: str
    goal: str
    step: str | None
    iteration: int
    data: Mapping[str, Any]
    prev: str
    run: int = 1  # the run the event belongs to (the envelope's `run`, absent for run 1)


def _run_problem(event: Event, current: int) -> str | None:
    """Why `event` cannot follow an event of run `current`, or None. A `run.started` opens
    the next run and carries its number in its data and its envelope; every other event
    belongs to the run that is open."""
    if event.type == RUN_STARTED:
        number = event.data.get("run") if isinstance(event.data, dict) else None
        if type(number) is not int or number != current + 1 or event.run != number:
            return f"run.started must open run {current + 1} (data and envelope `run`)"
        return None
    if event.run != current:
        return f"event of run {event.run} inside run {current}: a run was removed or forged"
    return None


@dataclass(frozen=True)
class Record:
    """A verified event with where it was read from."""

    event: Event
    hash: str
    segment: str
    line: int
    end: int  # byte offset just past this line in its segment


def open_segment(path: Path) -> int:
    """A segment opened without following a link: a planted link is a broken ledger."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LedgerBroken(
                path, 0, "is a link; the harness's own files are never links"
            ) from None
        raise


class LedgerBroken(TrustFailure):
    """The ledger fails verification at a named segment and line."""

    def __init__(self, path: Path | str, line: int, problem: str, seq: int | None = None) -> None:
        where = f"{path}: line {line}" + (f" (event {seq})" if seq is not None else "")
        super().__init__(f"{where}: {problem}")
        self.path = str(path)
        self.line = line
        self.seq = seq
        self.problem = problem


@dataclass(frozen=True)
class TornTail:
    """Bytes after the last newline of the last segment: a crash mid-append."""

    path: Path
    offset: int
    length: int


def segment_name(index: int) -> str:
    return f"{index:06d}.jsonl"


def _newer_version(line: bytes) -> int | None:
    """The format version of a line written by a newer goal-harness, or None: the event's
    `v` (inside `e`, where every format keeps it), read before the line's shape or MAC."""
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    event = raw.get("e") if isinstance(raw, dict) else None
    version = event.get("v") if isinstance(event, dict) else None
    return version if is_newer(version, FORMAT_VERSION) else None


def _later_run(raw: Mapping[str, Any]) -> bool:
    """The envelope's `run` is a whole number ≥ 2 (run 1 is written without it)."""
    return type(raw["run"]) is int and raw["run"] >= 2


def _load_canonical(body: bytes) -> Any:
    """`json.loads(body)` for a body as the ledger writes it (UTF-8, one value, no
    whitespace around it), without the encoding detection and the two whitespace matches
    json.loads adds around the same decoder; None when the bytes need json.loads itself.
    """
    try:
        text = body.decode("utf-8")
        value, end = _raw_decode(text)
    except ValueError:
        return None
    return value if end == len(text) else None


def _hmac_states(key: bytes, prefix: bytes) -> tuple[Any, Any]:
    """HMAC-SHA256 under `key` (RFC 2104) as two SHA-256 states: the inner one after
    `prefix`, and the outer one. Per line, two copies of SHA-256 states cost less than a
    copy of an `hmac.HMAC`, whose copy, update and hexdigest are Python-level methods.
    Checked against `hmac` once per ledger, so a slip fails loudly instead of weakening
    the MAC."""
    block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block) + prefix)
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))
    probe_inner, probe_outer = inner.copy(), outer.copy()
    probe_inner.update(b"probe")
    probe_outer.update(probe_inner.digest())
    if probe_outer.digest() != hmac.digest(key, prefix + b"probe", "sha256"):
        raise RuntimeError("the HMAC states do not match hmac's")
    return inner, outer


def _mac(base: Any, body: bytes) -> str:
    mac = base.copy()
    mac.update(body)
    return str(mac.hexdigest())


class Ledger:
    """One goal's ledger folder (`ledger/<id>/events`). Read with `records()`, then append."""

    def __init__(
        self, folder: Path, goal_id: str, key: bytes, segment_bytes: int = SEGMENT_BYTES
    ) -> None:
        self.folder = folder
        self.goal_id = goal_id
        self.segment_bytes = segment_bytes
        self._mac_base = hmac.new(key, _MAC_TAG, hashlib.sha256)
        self._inner, self._outer = _hmac_states(key, _MAC_TAG)
        self.head = START
        self.run = 1  # the run the last event belongs to (known once read)
        self.torn: TornTail | None = None
        self._segment_index = 1
        self._segment_size = 0
        self._segment_lines = 0
        self._scanned = False

    def segments(self) -> list[Path]:
        """Segment files in order; a gap or a stray name is a broken ledger."""
        if not self.folder.is_dir():
            return []
        names = sorted(p.name for p in self.folder.iterdir() if not p.name.startswith("."))
        for index, name in enumerate(names, start=1):
            if name != segment_name(index):
                raise LedgerBroken(
                    self.folder / name,
                    0,
                    f"unexpected segment name (expected {segment_name(index)})",
                )
        return [self.folder / name for name in names]

    def records(self) -> Iterator[Record]:
        """Stream and verify every event from the first; sets `head` and `torn` at the end."""
        seq, digest = START.seq, START.hash
        run = 1
        paths = self.segments()
        for number, path in enumerate(paths, start=1):
            last_segment = number == len(paths)
            size = whole = 0
            name = path.name
            with open(open_segment(path), "rb", buffering=_READ_BUFFER) as handle:
                for line_no, line in enumerate(handle, start=1):
                    if not line.endswith(b"\n"):
                        if last_segment:
                            self.torn = TornTail(path, size, len(line))
                            break
                        raise LedgerBroken(
                            path, line_no, "line has no newline before the next segment"
                        )
                    size += len(line)
                    record = self._accept(line, name, line_no, seq, digest, size)
                    if record is None:
                        record = self._verify(line, path, line_no, Position(seq, digest), size)
                    if record.event.run != run or record.event.type == RUN_STARTED:
                        problem = _run_problem(record.event, run)
                        if problem is not None:
                            raise LedgerBroken(path, line_no, problem, record.event.seq)
                        run = record.event.run
                    seq, digest = record.event.seq, record.hash
                    whole = line_no
                    yield record
            if size == 0 and self.torn is None:
                if not last_segment:
                    raise LedgerBroken(path, 1, "empty segment")
                # Made for a line that never landed (a full disk refused its one write, or
                # a power cut kept the new file but not its bytes): a torn tail of nothing.
                self.torn = TornTail(path, 0, 0)
            self._segment_index, self._segment_size, self._segment_lines = number, size, whole
        self.head = Position(seq, digest)
        self.run = run
        self._scanned = True

    def _accept(
        self, line: bytes, name: str, line_no: int, seq: int, digest: str, end: int
    ) -> Record | None:
        """The record for a line that passes every check after event `seq` (line hash
        `digest`), else None.

        The fast path of `_verify`: the same checks on the same bytes, with a cheaper JSON
        parse and cheaper record construction. A line it does not accept goes to
        `_verify`, which accepts it or names the first problem as it always has.
        """
        if not (
            line.startswith(_HEAD)
            and line[-_TRAILER:].startswith(_MAC_OPEN)
            and line.endswith(_TAIL)
        ):
            return None
        body = line[len(_HEAD) : -_TRAILER]
        if not self._mac_matches(body, line[_MAC_START:_MAC_END]):
            return None
        raw = _load_canonical(body)
        if not (
            isinstance(raw, dict)
            and (raw.keys() == EVENT_KEYS or (raw.keys() == RUN_EVENT_KEYS and _later_run(raw)))
            and raw["v"] == FORMAT_VERSION
            and raw["goal"] == self.goal_id
            and raw["seq"] == seq + 1
            and raw["prev"] == digest
        ):
            return None
        # The same objects the dataclass constructors make, in a third of the time: the
        # parsed mapping, whose keys were just checked, becomes the event's __dict__ once
        # `v` is dropped and `iter` renamed (a frozen __init__ would set each field through
        # object.__setattr__, and a new dict would copy them: about 1 µs an event).
        del raw["v"]
        raw["iteration"] = raw.pop("iter")
        event = _new(Event)
        _set_attr(event, "__dict__", raw)
        record = _new(Record)
        _set_attr(
            record,
            "__dict__",
            {
                "event": event,
                "hash": hashlib.sha256(line).hexdigest(),
                "segment": name,
                "line": line_no,
                "end": end,
            },
        )
        return record

    def _mac_matches(self, body: bytes, mac: bytes) -> bool:
        """The fast path's MAC check: the precomputed HMAC states, copied per line."""
        inner = self._inner.copy()
        inner.update(body)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return hmac.compare_digest(outer.hexdigest().encode(), mac)

    def _verify(self, line: bytes, path: Path, line_no: int, prev: Position, end: int) -> Record:
        """The record of a line the fast path did not accept, or the first problem. A line
        a newer goal-harness wrote is named so, whatever else this version finds wrong with
        it (its version is read only once a check failed: a good line costs nothing more)."""
        try:
            return self._checked(line, path, line_no, prev, end)
        except LedgerBroken:
            newer = _newer_version(line)
            if newer is None:
                raise
            text = f"{newer_text(newer)} (this one reads ledger format {FORMAT_VERSION})"
            raise LedgerBroken(path, line_no, text) from None

    def _checked(self, line: bytes, path: Path, line_no: int, prev: Position, end: int) -> Record:
        if not (
            line.startswith(_HEAD)
            and line[-_TRAILER:].startswith(_MAC_OPEN)
            and line.endswith(_TAIL)
        ):
            raise LedgerBroken(path, line_no, "not a ledger line")
        body = line[len(_HEAD) : -_TRAILER]
        self._check_mac(body, line[-_TRAILER + len(_MAC_OPEN) : -len(_TAIL)], path, line_no)
        event = self._parse(body, path, line_no)
        if event.seq != prev.seq + 1:
            raise LedgerBroken(
                path,
                line_no,
                f"sequence {event.seq} follows {prev.seq}: an event was removed, reordered or replayed",
                event.seq,
            )
        if event.prev != prev.hash:
            raise LedgerBroken(
                path,
                line_no,
                "chain broken: prev does not match the hash of the line before",
                event.seq,
            )
        return Record(event, hashlib.sha256(line).hexdigest(), path.name, line_no, end)

    def _check_mac(self, body: bytes, mac: bytes, path: Path, line_no: int) -> None:
        if not hmac.compare_digest(_mac(self._mac_base, body).encode(), mac):
            raise LedgerBroken(
                path,
                line_no,
                "MAC does not match: the event was edited or forged, or the secret is wrong",
            )

    def _parse(self, body: bytes, path: Path, line_no: int) -> Event:
        try:
            raw = json.loads(body)
        except ValueError:
            raise LedgerBroken(path, line_no, "event is not valid JSON") from None
        if isinstance(raw, dict) and "v" in raw and raw["v"] != FORMAT_VERSION:  # first
            raise LedgerBroken(
                path,
                line_no,
                f"unknown ledger format version {raw['v']!r} (this harness reads version {FORMAT_VERSION})",
            )
        if not isinstance(raw, dict) or raw.keys() not in (EVENT_KEYS, RUN_EVENT_KEYS):
            extra = unknown_keys(raw, RUN_EVENT_KEYS) if isinstance(raw, dict) else []
            if extra and raw.keys() >= EVENT_KEYS:  # a MAC'd event: a harness added them
                raise LedgerBroken(
                    path,
                    line_no,
                    f"the event holds field(s) this goal-harness does not know "
                    f"({', '.join(extra[:5])}): {newer_text(FORMAT_VERSION)}",
                )
            raise LedgerBroken(path, line_no, "event does not have the ledger's fields")
        if "run" in raw and not _later_run(raw):
            raise LedgerBroken(
                path, line_no, f"run {raw['run']!r} is not a whole number ≥ 2 (run 1 names none)"
            )
        if raw["goal"] != self.goal_id:
            raise LedgerBroken(
                path, line_no, f"event belongs to goal {raw['goal']!r}, not {self.goal_id!r}"
            )
        return Event(
            raw["seq"],
            raw["ts"],
            raw["type"],
            raw["goal"],
            raw["step"],
            raw["iter"],
            raw["data"],
            raw["prev"],
            raw.get("run", 1),
        )

    def load(self) -> list[Record]:
        return list(self.records())

    def cut_torn_tail(self) -> TornTail | None:
        """Drop a torn last line. Only whole events are ever kept; nothing else is rewritten."""
        torn = self.torn
        if torn is None:
            return None
        fd = os.open(torn.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, torn.offset)
            os.fsync(fd)
        finally:
            os.close(fd)
        if torn.offset == 0:
            torn.path.unlink()
            fsync_dir(torn.path.parent)
        self.torn = None
        return torn

    def append(
        self, type: str, step: str | None, iteration: int, data: Mapping[str, Any], ts: str
    ) -> Record:
        """Append one event as one fsynced line; the ledger must have been read first. A
        `run.started` opens the run its data names; each event carries the open run."""
        if not self._scanned or self.torn is not None:
            raise HarnessError("ledger appended before it was verified")
        seq = self.head.seq + 1
        run = data["run"] if type == RUN_STARTED else self.run
        if type == RUN_STARTED and run != self.run + 1:
            raise HarnessError(f"run.started must open run {self.run + 1}, not {run!r}")
        event: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "seq": seq,
            "ts": ts,
            "type": type,
            "goal": self.goal_id,
            "step": step,
            "iter": iteration,
            "data": dict(data),
            "prev": self.head.hash,
        }
        if run != 1:
            event["run"] = run
        if len(canonical_json(event["data"])) > MAX_DATA_BYTES:
            raise HarnessError(f"event {type} data exceeds {MAX_DATA_BYTES} bytes")
        body = canonical_json(event)
        line = _HEAD + body + _MAC_OPEN + _mac(self._mac_base, body).encode() + _TAIL
        path = self._target(len(line))
        append_line(path, line)
        if self._segment_size == 0:
            fsync_dir(self.folder)
        self._segment_size += len(line)
        self._segment_lines += 1
        digest = hashlib.sha256(line).hexdigest()
        self.head = Position(seq, digest)
        # Parse back what was written, so live rendering sees exactly what replay will.
        parsed = self._parse(body, path, self._segment_lines)
        self.run = run
        return Record(parsed, digest, path.name, self._segment_lines, self._segment_size)

    def _target(self, size: int) -> Path:
        if self._segment_size and self._segment_size + size > self.segment_bytes:
            self._segment_index += 1
            self._segment_size = 0
            self._segment_lines = 0
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / segment_name(self._segment_index)
