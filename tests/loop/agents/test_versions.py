"""The agent's version as each pinned CLI reports it in what it writes anyway (agents.md,
"The agent's version"): aider's first line, Claude Code's init event or transcript, Codex's
rollout; anything not shaped like a version is no version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.loop.agents import parse_output
from harness.loop.agents.records import claude_project_dir, claude_version, codex_rollout
from harness.loop.agents.usage import version
from tests.loop.agents.captures import DATA, capture
from tests.loop.agents.test_records import RESUMED_SESSION, _at


@pytest.mark.parametrize(
    ("fmt", "tool", "name", "said"),
    [
        ("aider", "aider", "edit-nostream.out", "0.86.2"),
        ("aider", "aider", "err-429.out", "0.86.2"),
        ("claude-json", "claude", "edit-streamjson.out", "2.1.332"),
        ("claude-json", "claude", "resume-1.out", None),  # --output-format json: no version
        ("codex-jsonl", "codex", "edit-ww.out", None),  # its stdout names none
    ],
)
def test_the_version_in_a_tools_output(fmt: str, tool: str, name: str, said: str | None) -> None:
    text = capture(tool, name).decode("utf-8", errors="surrogateescape")
    assert parse_output(fmt, text).version == said


def test_claude_stamps_its_transcript_with_its_version(tmp_path: Path) -> None:
    cwd = tmp_path / "repo"
    folder = claude_project_dir(tmp_path / "home" / ".claude", cwd)
    folder.mkdir(parents=True)
    shutil.copy(DATA / "claude" / "resume-transcript.jsonl", folder / f"{RESUMED_SESSION}.jsonl")
    env = {"HOME": str(tmp_path / "home")}
    assert claude_version(env, cwd, _at("2026-12-01T09:05:30.900Z")) == "2.1.332"
    assert claude_version(env, cwd, _at("2030-01-01T00:00:00Z")) is None  # nothing since
    assert claude_version({}, cwd, 0.0) is None


def test_codex_names_its_version_in_the_rollouts_session_meta(tmp_path: Path) -> None:
    rollout = "rollout-2026-12-01T09-06-35-01a230db-1c3a-72a3-8dac-091bcec6f29f.jsonl"
    folder = tmp_path / "codex" / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "codex" / rollout, folder / rollout)
    found = codex_rollout({"CODEX_HOME": str(tmp_path / "codex")}, 0.0)
    assert found is not None and found.version == "0.171.0"


@pytest.mark.parametrize(
    "value",
    ["", "v1.2", "1.2.3 && rm -rf /", "1.2\n3", "1" * 41, 2.1, None, "\x1b[31m1.2"],
)
def test_anything_not_shaped_like_a_version_is_none(value: object) -> None:
    assert version(value) is None


def test_a_version_shape_is_kept() -> None:
    assert [version(v) for v in ("2.1.332", "0.171.0", "1.0.0-beta.1+build.5")] == [
        "2.1.332",
        "0.171.0",
        "1.0.0-beta.1+build.5",
    ]
