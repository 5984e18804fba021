"""What a tool wrote down itself about its model calls, read back after the step.

A build killed by its timeout prints no closing result, but the tools keep their own
record as they go (checked with the real tools, see docs/specs/agents.md):
- Claude Code appends each assistant message, with its `usage`, to its session
  transcript `<config dir>/projects/<cwd with every non-alphanumeric as ->/<id>.jsonl`
  (`<config dir>` is `CLAUDE_CONFIG_DIR`, else `HOME/.claude`), and on exit (SIGTERM
  included) a `cost-state` line whose `totalCostUSD` is the session's running total.
- Codex appends a `token_usage_record` per model response, with that response's own
  `usage`, to `CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`
  (`CODEX_HOME` defaults to `HOME/.codex`).
Only lines stamped at or after the step's start count, and only from files changed since
then. Every file is untrusted: read line by line with a line cap, a file cap and a cap on
how many files are read; what does not parse is skipped.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from harness.loop.agents.lines import MAX_LINE_BYTES, json_values
from harness.loop.agents.usage import Tokens, cost, count, session, version

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_FILES = 20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Recorded:
    """Spend a tool recorded itself since a moment."""

    turns: int
    tokens: Tokens
    cost_usd: float | None  # claude's own figure (from cost-state lines), when there is one
    session: str | None
    source: str  # for the step's evidence
    session_cost_usd: float | None = None  # the session's running total after the step
    session_tokens: Tokens | None = None  # the thread's running total after the step
    version: str | None = None  # the tool's, as its record names it


def claude_home(env: Mapping[str, str]) -> Path | None:
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env["HOME"], ".claude") if env.get("HOME") else None


def codex_home(env: Mapping[str, str]) -> Path | None:
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env["HOME"], ".codex") if env.get("HOME") else None


def claude_project_dir(home: Path, cwd: Path) -> Path:
    # Claude Code 2.1.332 names it so: "/tmp/a_b c+d~é" → "-tmp-a-b-c-d--".
    return home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", os.fspath(cwd))


def claude_transcript(env: Mapping[str, str], cwd: Path, since: float) -> Recorded | None:
    """Claude Code's transcript lines written since `since` for a session run in `cwd`."""
    home = claude_home(env)
    if home is None:
        return None
    folder = claude_project_dir(home, cwd)
    totals = _ClaudeTotals(since)
    for path in _changed_files(folder, "*.jsonl", since):
        totals.read(path)
    return totals.recorded()


def claude_version(env: Mapping[str, str], cwd: Path, since: float) -> str | None:
    """The version Claude Code stamped on its transcript lines written since `since` (its
    `--output-format json` result names none)."""
    home = claude_home(env)
    if home is None:
        return None
    found = None
    for path in _changed_files(claude_project_dir(home, cwd), "*.jsonl", since):
        for record in _records(path):
            if _stamp(record.get("timestamp")) >= since:
                found = version(record.get("version")) or found
    return found


def codex_rollout(
    env: Mapping[str, str], since: float, thread: str | None = None
) -> Recorded | None:
    """Codex's per-response usage since `since` (for `thread` only, when it is known)."""
    home = codex_home(env)
    if home is None:
        return None
    pattern = f"rollout-*-{thread}.jsonl" if thread else "rollout-*.jsonl"
    turns: set[str] = set()
    tokens: Tokens = (0, 0, 0)
    found: str | None = None
    thread_total: Tokens | None = None
    cli: str | None = None
    for path in _changed_files(home / "sessions", f"*/*/*/{pattern}", since):
        for record in _records(path):
            payload = record.get("payload")
            if record.get("type") == "session_meta" and isinstance(payload, dict):
                cli = version(payload.get("cli_version")) or cli
            if record.get("type") != "token_usage_record" or not isinstance(payload, dict):
                continue
            if _stamp(record.get("timestamp")) < since:
                continue
            found = session(payload.get("thread_id")) or found
            turns.add(str(payload.get("turn_id")))
            tokens = _codex_add(tokens, payload.get("usage"))
            thread_total = _codex_add((0, 0, 0), payload.get("thread_token_usage"))
    if found is None:
        return None
    source = "codex rollout token_usage_record"
    return Recorded(
        len(turns), tokens, None, found, source, session_tokens=thread_total, version=cli
    )


class _ClaudeTotals:
    def __init__(self, since: float) -> None:
        self.since = since
        self.turns = 0
        self.tokens: Tokens = (0, 0, 0)
        self.session: str | None = None
        self.cost_before = 0.0
        self.cost_after: float | None = None
        self.version: str | None = None

    def read(self, path: Path) -> None:
        last_id: str | None = None
        started = False  # a line stamped since the step began was seen in this file
        for record in _records(path):
            kind = record.get("type")
            if kind == "cost-state":
                self._cost_state(record, started)
                continue
            if _stamp(record.get("timestamp")) < self.since:
                continue
            started = True
            self.version = version(record.get("version")) or self.version
            message = record.get("message")
            if kind != "assistant" or not isinstance(message, dict):
                continue
            ident = message.get("id")
            if isinstance(ident, str) and ident == last_id:
                continue  # one message, several content blocks: its usage is counted once
            last_id = ident if isinstance(ident, str) else None
            self.turns += 1
            self.tokens = _claude_add(self.tokens, message.get("usage"))
            self.session = session(record.get("sessionId")) or self.session

    def _cost_state(self, record: dict[str, Any], started: bool) -> None:
        total = cost(record.get("totalCostUSD"))
        if total is None:
            return
        if started:
            self.cost_after = total
        else:
            self.cost_before = total

    def recorded(self) -> Recorded | None:
        if not self.turns:
            return None
        spent = None
        if self.cost_after is not None and self.cost_after >= self.cost_before:
            spent = self.cost_after - self.cost_before
        source = "claude transcript"
        return Recorded(
            self.turns,
            self.tokens,
            spent,
            self.session,
            source,
            session_cost_usd=self.cost_after,
            version=self.version,
        )


def _changed_files(folder: Path, pattern: str, since: float) -> list[Path]:
    try:
        found = [p for p in folder.glob(pattern) if _mtime(p) >= since - 1]
    except OSError:
        return []
    return sorted(found, key=_mtime)[-MAX_FILES:]


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """Each JSON object line of a regular file, up to the caps; never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        read = 0
        while read <= MAX_FILE_BYTES:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            read += len(raw)
            if not raw:
                return
            if len(raw) > MAX_LINE_BYTES:
                read += _skip_line(handle)
                continue
            for value in json_values(raw.decode("utf-8", errors="replace")):
                if isinstance(value, dict):
                    yield value


def _skip_line(handle: BinaryIO) -> int:
    skipped = 0
    while True:
        part = handle.readline(_CHUNK)
        skipped += len(part)
        if not part or part.endswith(b"\n"):
            return skipped


def _stamp(value: Any) -> float:
    """An ISO time as seconds since the epoch; -inf when it is not one."""
    if not isinstance(value, str):
        return float("-inf")
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return float("-inf")


def _claude_add(tokens: Tokens, usage: Any) -> Tokens:
    if not isinstance(usage, dict):
        return tokens
    fresh = count(usage.get("input_tokens")) or 0
    written = count(usage.get("cache_creation_input_tokens")) or 0
    hits = count(usage.get("cache_read_input_tokens")) or 0
    out = count(usage.get("output_tokens")) or 0
    return (tokens[0] + fresh + written + hits, tokens[1] + hits, tokens[2] + out)


def _codex_add(tokens: Tokens, usage: Any) -> Tokens:
    if not isinstance(usage, dict):
        return tokens
    keys = ("input_tokens", "cached_input_tokens", "output_tokens")
    added = [count(usage.get(key)) or 0 for key in keys]
    return (tokens[0] + added[0], tokens[1] + added[1], tokens[2] + added[2])
