"""agents.records: what Claude Code and Codex recorded themselves, read after a kill."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

from harness.loop.agents.records import claude_project_dir, claude_transcript, codex_rollout
from tests.loop.agents.captures import DATA

KILLED_SESSION = "3420ccca-1a1b-44db-ba74-ea6550eec6ff"
RESUMED_SESSION = "01c48cc0-be4a-4669-8a27-fa8ff64c01f6"
RESUMED_THREAD = "01a230da-af36-7401-8a99-6c82c022acd4"
KILLED_THREAD = "01a230db-1c3a-72a3-8dac-091bcec6f29f"


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _claude_home(tmp_path: Path, cwd: Path, transcript: str, session: str) -> dict[str, str]:
    folder = claude_project_dir(tmp_path / "home" / ".claude", cwd)
    folder.mkdir(parents=True)
    shutil.copy(DATA / "claude" / transcript, folder / f"{session}.jsonl")
    return {"HOME": str(tmp_path / "home")}


def _codex_home(tmp_path: Path, rollout: str) -> dict[str, str]:
    folder = tmp_path / "codex" / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "codex" / rollout, folder / rollout)
    return {"HOME": str(tmp_path / "elsewhere"), "CODEX_HOME": str(tmp_path / "codex")}


def test_claude_project_folder_is_named_as_claude_names_it() -> None:
    # Observed with the real CLI: HOME/.claude/projects/-tmp-acc-a-b-c-d--
    folder = claude_project_dir(Path("/h/.claude"), Path("/tmp/acc/a_b c+d~é"))
    assert folder == Path("/h/.claude/projects/-tmp-acc-a-b-c-d--")


def test_claude_killed_by_timeout_left_its_calls_and_cost(tmp_path: Path) -> None:
    # Two tool calls (2000/100 and 2100/100 tokens), then SIGTERM while waiting on a third.
    cwd = tmp_path / "repo.mshh"
    env = _claude_home(tmp_path, cwd, "kill-transcript.jsonl", KILLED_SESSION)
    found = claude_transcript(env, cwd, _at("2026-12-01T09:06:20Z"))
    assert found is not None
    assert (found.turns, found.tokens, found.session) == (2, (4100, 0, 200), KILLED_SESSION)
    # claude wrote its cost-state on SIGTERM: 4100 x $4/M + 200 x $20/M
    assert (found.cost_usd, found.session_cost_usd) == (0.0204, 0.0204)


def test_claude_transcript_counts_only_this_process(tmp_path: Path) -> None:
    # Three processes on one session (-p, --resume, --continue); the third began at 09:05:30.9.
    cwd = tmp_path / "repo"
    env = _claude_home(tmp_path, cwd, "resume-transcript.jsonl", RESUMED_SESSION)
    found = claude_transcript(env, cwd, _at("2026-12-01T09:05:30.900Z"))
    assert found is not None
    assert (found.turns, found.tokens) == (1, (1000, 0, 50))
    assert found.cost_usd == 0.015 - 0.01 and found.session_cost_usd == 0.015


def test_claude_config_dir_wins_over_home(tmp_path: Path) -> None:
    cwd = tmp_path / "repo"
    env = _claude_home(tmp_path, cwd, "resume-transcript.jsonl", RESUMED_SESSION)
    assert claude_transcript({"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}, cwd, 0) is None
    assert claude_transcript({"CLAUDE_CONFIG_DIR": env["HOME"] + "/.claude"}, cwd, 0) is not None


def test_claude_transcript_of_another_folder_or_time_is_not_read(tmp_path: Path) -> None:
    cwd = tmp_path / "repo"
    env = _claude_home(tmp_path, cwd, "resume-transcript.jsonl", RESUMED_SESSION)
    assert claude_transcript(env, tmp_path / "other", 0) is None
    assert claude_transcript(env, cwd, _at("2026-12-01T09:06:00Z")) is None
    assert claude_transcript({}, cwd, 0) is None


def test_codex_rollout_has_each_response_of_this_process(tmp_path: Path) -> None:
    rollout = f"rollout-2026-12-01T09-06-07-{RESUMED_THREAD}.jsonl"
    env = _codex_home(tmp_path, rollout)
    # the third process (exec resume --last) made its one request at 09:06:08.750
    found = codex_rollout(env, _at("2026-12-01T09:06:08.600Z"), RESUMED_THREAD)
    assert found is not None
    assert (found.turns, found.tokens, found.session) == (1, (1000, 0, 50), RESUMED_THREAD)
    assert found.session_tokens == (3000, 0, 150)
    assert codex_rollout(env, 0, RESUMED_THREAD) == found.__class__(
        3,
        (3000, 0, 150),
        None,
        RESUMED_THREAD,
        found.source,
        session_tokens=(3000, 0, 150),
        version="0.171.0",
    )
    assert codex_rollout(env, 0, "another-thread") is None


def test_codex_killed_mid_turn_left_its_first_response(tmp_path: Path) -> None:
    rollout = f"rollout-2026-12-01T09-06-35-{KILLED_THREAD}.jsonl"
    env = _codex_home(tmp_path, rollout)
    found = codex_rollout(env, _at("2026-12-01T09:06:30Z"))
    assert found is not None
    assert (found.turns, found.tokens, found.session) == (1, (2000, 0, 100), KILLED_THREAD)


def test_a_symlinked_record_is_not_followed(tmp_path: Path) -> None:
    rollout = f"rollout-2026-12-01T09-06-35-{KILLED_THREAD}.jsonl"
    env = _codex_home(tmp_path, rollout)
    folder = tmp_path / "codex" / "sessions" / "2026" / "12" / "01"
    (folder / rollout).rename(tmp_path / "real.jsonl")
    (folder / rollout).symlink_to(tmp_path / "real.jsonl")
    assert codex_rollout(env, 0) is None
