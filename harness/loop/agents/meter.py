"""One build's spend: its stdout read as it arrives, then the tool's own records.

`steps.run_step` hands every stdout chunk to `Meter.feed` (nothing depends on the
bounded tail); `Meter.finish` closes the stream and, where the output is not enough,
reads what the tool recorded itself (`records`): Codex's rollout always (each response's
own usage is better evidence than a total that may be the thread's), Claude Code's
transcript when no result was printed (a build killed by its timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from harness.loop.agents.aider import AiderParser
from harness.loop.agents.claude import ClaudeParser
from harness.loop.agents.codex import CodexParser
from harness.loop.agents.lines import Parser
from harness.loop.agents.plain import PlainParser
from harness.loop.agents.records import (
    Recorded,
    claude_transcript,
    claude_version,
    codex_rollout,
)
from harness.loop.agents.usage import Usage
from harness.model.config import Prices

PARSERS: dict[str, Callable[[], Parser]] = {
    "plain": PlainParser,
    "claude-json": ClaudeParser,
    "codex-jsonl": CodexParser,
    "aider": AiderParser,
}
FORMATS = tuple(PARSERS)
# Claude's transcript has tokens but no per-message cost. Without the config's `prices`
# they are priced at the highest list rates Claude Code 2.1.332 applied (claude-opus-4-7:
# $5 input, $6.25 cache write, $25 output per million; cache reads priced as writes), so
# a killed build counts more, never less.
CLAUDE_CEILING = Prices(6.25, 6.25, 25.0)


def make_parser(fmt: str) -> Parser:
    try:
        return PARSERS[fmt]()
    except KeyError:
        raise ValueError(
            f"unknown agent output format {fmt!r} (expected one of {FORMATS})"
        ) from None


def parse_output(fmt: str, stdout: str) -> Usage:
    """The Usage of a whole output at once (the stream parser fed one chunk)."""
    parser = make_parser(fmt)
    parser.feed(stdout.encode("utf-8", errors="surrogateescape"))
    return parser.finish()


class Meter:
    def __init__(
        self,
        fmt: str,
        env: Mapping[str, str],
        cwd: Path,
        since: float,
        prices: Prices | None = None,
    ) -> None:
        self.fmt, self.env, self.cwd, self.since, self.prices = fmt, env, cwd, since, prices
        self.parser = make_parser(fmt)

    def feed(self, chunk: bytes) -> None:
        self.parser.feed(chunk)

    def finish(self) -> Usage:
        usage = self.parser.finish()
        if self.fmt == "codex-jsonl":
            recorded = codex_rollout(self.env, self.since, usage.session)
            return _with_rollout(usage, recorded) if recorded else usage
        if self.fmt == "claude-json" and usage.cost_usd is None:
            recorded = claude_transcript(self.env, self.cwd, self.since)
            usage = self._with_transcript(usage, recorded) if recorded else usage
        if self.fmt == "claude-json" and usage.version is None:
            usage = replace(usage, version=claude_version(self.env, self.cwd, self.since))
        return usage

    def _with_transcript(self, usage: Usage, recorded: Recorded) -> Usage:
        if recorded.cost_usd is not None:
            spent, how = recorded.cost_usd, "cost-state totals"
        else:
            prices = self.prices or CLAUDE_CEILING
            spent, how = prices.cost(*recorded.tokens), "its tokens priced"
        return replace(
            usage,
            cost_usd=spent,
            cost_scope="process",
            turns=max(usage.turns or 0, recorded.turns),
            session=usage.session or recorded.session,
            evidence=f"no result printed: {recorded.source} since the step began ({how})",
            session_cost_usd=recorded.session_cost_usd,
            version=usage.version or recorded.version,
        )


def _with_rollout(usage: Usage, recorded: Recorded) -> Usage:
    return replace(
        usage,
        turns=max(usage.turns or 0, recorded.turns),
        tokens=recorded.tokens,
        tokens_scope="process",
        session=usage.session or recorded.session,
        evidence=f"turns and tokens: {recorded.source} since the step began",
        session_tokens=recorded.session_tokens or usage.session_tokens,
        version=usage.version or recorded.version,
    )
