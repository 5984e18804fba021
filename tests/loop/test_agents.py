"""agents: the report file and agent output are untrusted; bad values become None + error."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path

import pytest

from harness.loop.agents import (
    MAX_REPORT_BYTES,
    MAX_SUMMARY_CHARS,
    Usage,
    combine,
    parse_output,
    read_report_file,
)
from harness.loop.steps import child_env, run_step

DATA = Path(__file__).resolve().parents[1] / "data"
NOTHING = Usage(None, None, None, None)
FIELD = "report file field ignored: "


def _data(name: str) -> str:
    return (DATA / name).read_text()


# --- the report file -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'{"cost_usd": 1.25, "turns": 7, "summary": "fixed it"}',
            Usage(1.25, 7, "fixed it", None),
        ),
        (b'{"cost_usd": 3}', Usage(3.0, None, None, None)),
        (b'{"cost_usd": 0, "turns": 0, "summary": ""}', Usage(0.0, 0, "", None)),
        (b'{"cost_usd": -0.0}', Usage(0.0, None, None, None)),
        (b'{"turns": 2, "model": "x", "extra": [1]}', Usage(None, 2, None, None)),
        (b"{}", NOTHING),
        # bad fields: each becomes None, the others survive
        (
            b'{"cost_usd": -1, "turns": 2}',
            Usage(None, 2, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (
            b'{"cost_usd": "1.5"}',
            Usage(None, None, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (
            b'{"cost_usd": true}',
            Usage(None, None, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (
            b'{"cost_usd": null}',
            Usage(None, None, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (
            b'{"cost_usd": 1e400}',
            Usage(None, None, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (
            b'{"cost_usd": 1' + b"0" * 400 + b"}",
            Usage(None, None, None, FIELD + "cost_usd must be a finite number >= 0"),
        ),
        (b'{"turns": 1.5}', Usage(None, None, None, FIELD + "turns must be an integer >= 0")),
        (b'{"turns": false}', Usage(None, None, None, FIELD + "turns must be an integer >= 0")),
        (b'{"turns": -3}', Usage(None, None, None, FIELD + "turns must be an integer >= 0")),
        (b'{"summary": 42}', Usage(None, None, None, FIELD + "summary must be a string")),
        (
            b'{"cost_usd": -1, "turns": "x", "summary": "ok"}',
            Usage(
                None,
                None,
                "ok",
                FIELD + "cost_usd must be a finite number >= 0; turns must be an integer >= 0",
            ),
        ),
        # bad documents: nothing is used
        (
            b"",
            Usage(
                None,
                None,
                None,
                "report file ignored: not valid JSON (Expecting value: line 1 column 1 (char 0))",
            ),
        ),
        (
            b'{"cost_usd": NaN}',
            Usage(None, None, None, "report file ignored: not valid JSON (non-finite number NaN)"),
        ),
        (
            b'{"cost_usd": 1, "cost_usd": 0}',
            Usage(
                None, None, None, "report file ignored: not valid JSON (duplicate key 'cost_usd')"
            ),
        ),
        (b"[1, 2]", Usage(None, None, None, "report file ignored: not a JSON object")),
        (b'"cost_usd"', Usage(None, None, None, "report file ignored: not a JSON object")),
        (b"[" * 100_000, None),
    ],
)
def test_report_file(tmp_path: Path, content: bytes, expected: Usage | None) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(content)
    usage = read_report_file(path)
    if expected is None:  # only that it was refused, whatever the parser's words
        assert usage is not None and usage.cost_usd is None
        assert usage.error is not None and usage.error.startswith("report file ignored: ")
    else:
        assert usage == expected


def test_negative_zero_cost_is_recorded_as_zero(tmp_path: Path) -> None:
    # -0.0 == 0.0, but canonical JSON would write "-0.0" into the ledger.
    path = tmp_path / "report.json"
    path.write_bytes(b'{"cost_usd": -0.0}')
    usage = read_report_file(path)
    assert usage is not None and usage.cost_usd is not None
    assert math.copysign(1.0, usage.cost_usd) == 1.0


def test_missing_report_file_is_none(tmp_path: Path) -> None:
    assert read_report_file(tmp_path / "report.json") is None


def test_invalid_utf8_report_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(b'{"summary": "\xff\xfe"}')
    usage = read_report_file(path)
    assert usage is not None and (usage.summary, usage.cost_usd) == (None, None)
    assert usage.error is not None and usage.error.startswith("report file ignored: not valid JSON")


def test_oversized_report_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    padding = " " * MAX_REPORT_BYTES
    path.write_text('{"cost_usd": 1}' + padding)
    assert read_report_file(path) == Usage(
        None, None, None, f"report file ignored: is larger than {MAX_REPORT_BYTES} bytes"
    )
    path.write_text('{"cost_usd": 1}' + padding[: MAX_REPORT_BYTES - 15])
    assert read_report_file(path) == Usage(1.0, None, None, None)


def test_symlinked_report_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"summary": "the secret"}')
    (tmp_path / "report.json").symlink_to(secret)
    assert read_report_file(tmp_path / "report.json") == Usage(
        None, None, None, "report file ignored: is a symbolic link"
    )


def test_non_regular_report_is_ignored(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    expected = Usage(None, None, None, "report file ignored: is not a regular file")
    assert read_report_file(tmp_path / "fifo") == expected


def test_long_summary_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"summary": "é" * 5_000}))
    usage = read_report_file(path)
    assert usage is not None and usage.summary == "é" * MAX_SUMMARY_CHARS


def test_report_written_by_a_real_agent_process(tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, os, sys\n"
        "prompt = sys.stdin.read()\n"
        "summary = f'did: {prompt.strip()}'\n"
        "with open(os.environ['HARNESS_REPORT_FILE'], 'w') as f:\n"
        "    json.dump({'cost_usd': 0.5, 'turns': 3, 'summary': summary}, f)\n"
    )
    env = child_env(os.environ, [], {"HARNESS_REPORT_FILE": str(report)})
    result = run_step([sys.executable, str(agent)], tmp_path, env, b"fix login\n", 20)
    assert result.exit_code == 0, result.output_tail
    assert read_report_file(report) == Usage(0.5, 3, "did: fix login", None)


# --- agent output --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "name", "expected"),
    [
        (
            "claude-json",
            "agent_claude_success.txt",
            Usage(
                0.4213,
                12,
                "Fixed the login timeout: login() now honours the timeout argument and "
                "tests/test_login.py passes.",
                None,
            ),
        ),
        (
            "claude-json",
            "agent_claude_error_max_turns.txt",
            Usage(2.0871, 31, None, "error_max_turns"),
        ),
        (
            "claude-json",
            "agent_claude_is_error.txt",
            Usage(
                0.0,
                1,
                'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                '"message":"Overloaded"}}',
                "is_error",
            ),
        ),
        ("claude-json", "agent_claude_verbose.txt", Usage(0.0931, 4, "Done.", None)),
        (
            "codex-jsonl",
            "agent_codex_success.jsonl",
            Usage(None, 2, "login() now honours the timeout; tests pass.", None),
        ),
        (
            "codex-jsonl",
            "agent_codex_failed.jsonl",
            Usage(
                None,
                0,
                None,
                "error: stream disconnected before completion: retrying 1/5; "
                "turn.failed: stream disconnected before completion",
            ),
        ),
        ("plain", "agent_claude_success.txt", NOTHING),
        ("aider", "agent_codex_success.jsonl", NOTHING),
    ],
)
def test_recorded_outputs(fmt: str, name: str, expected: Usage) -> None:
    parsed = parse_output(fmt, _data(name))
    assert dataclasses.replace(parsed, session=None, tokens=None) == expected


@pytest.mark.parametrize(
    ("fmt", "name", "session"),
    [
        ("claude-json", "agent_claude_success.txt", "3f1c9a52-7d1e-4f0b-9a8e-2b6d1c0e7a11"),
        ("claude-json", "agent_claude_verbose.txt", "5a2b"),
        ("codex-jsonl", "agent_codex_success.jsonl", "0199a213-81c0-7800-8aa1-bbab2a035a53"),
    ],
)
def test_session_ids_are_read(fmt: str, name: str, session: str) -> None:
    # The session id is what turns a resumed session's running total into an increase.
    assert parse_output(fmt, _data(name)).session == session


CLAUDE_NONE = Usage(None, None, None, "claude-json: no result object in the output")
CODEX_NONE = Usage(None, None, None, "codex-jsonl: no JSON events in the output")


@pytest.mark.parametrize(
    ("fmt", "stdout", "expected"),
    [
        ("claude-json", "", CLAUDE_NONE),
        ("claude-json", "Error: not logged in\n", CLAUDE_NONE),
        ("claude-json", '{"type":"result","num_turns":', CLAUDE_NONE),
        ("claude-json", '{"type":"assistant"}\n[1,2]\n"result"\n', CLAUDE_NONE),
        ("claude-json", '{"type":"result","total_cost_usd":NaN}', CLAUDE_NONE),
        (
            "claude-json",
            '{"type":"result","subtype":"success","total_cost_usd":-2,"num_turns":true,"result":7}',
            NOTHING,
        ),
        (
            "claude-json",
            '{"type":"result","subtype":"success","num_turns":1}\n'
            '{"type":"result","subtype":"error_during_execution","num_turns":2}\n',
            Usage(None, 2, None, "error_during_execution"),
        ),
        (
            "claude-json",
            '{"type":"result","subtype":"success","total_cost_usd":1,"result":"'
            + "r" * 3_000
            + '"}',
            Usage(1.0, None, "r" * MAX_SUMMARY_CHARS, None),
        ),
        (
            "claude-json",
            '[{"type":"result","num_turns":1},{"type":"result","num_turns":2},{"type":"user"}]',
            Usage(None, 2, None, None),
        ),
        ("codex-jsonl", "", CODEX_NONE),
        ("codex-jsonl", "codex: command not found\n", CODEX_NONE),
        ("codex-jsonl", '{"type":"turn.completed"', CODEX_NONE),
        (
            "codex-jsonl",
            '[… 512 bytes truncated]\nd":"x"}}\n{"type":"turn.completed"}\n',
            Usage(None, 1, None, None),
        ),
        ("codex-jsonl", '{"type":"turn.failed"}\n', Usage(None, 0, None, "turn.failed")),
        (
            "codex-jsonl",
            '{"type":"item.completed","item":{"type":"agent_message","text":5}}\n',
            Usage(None, 0, None, None),
        ),
    ],
)
def test_malformed_outputs(fmt: str, stdout: str, expected: Usage) -> None:
    assert dataclasses.replace(parse_output(fmt, stdout), tokens=None) == expected


def test_codex_token_usage_is_summed_for_pricing() -> None:
    # A price per million tokens in the config turns these into cost (controller.finish_build).
    assert parse_output("codex-jsonl", _data("agent_codex_success.jsonl")).tokens == (
        54875,
        54400,
        432,
    )


def test_unknown_format_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown agent output format 'jsonish'"):
        parse_output("jsonish", "")


# --- combining -----------------------------------------------------------------------

PARSED = Usage(2.0, 10, "from output", "error_max_turns")


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (None, PARSED),
        (NOTHING, PARSED),
        (Usage(0.5, 3, "from report", None), Usage(0.5, 3, "from report", "error_max_turns")),
        (Usage(None, 4, None, None), Usage(2.0, 4, "from output", "error_max_turns")),
        (
            Usage(None, None, None, "report file ignored: not a JSON object"),
            Usage(
                2.0, 10, "from output", "report file ignored: not a JSON object; error_max_turns"
            ),
        ),
        (Usage(0.0, 0, "", None), Usage(0.0, 0, "", "error_max_turns")),
    ],
)
def test_combine_report_wins_where_present(report: Usage | None, expected: Usage) -> None:
    assert combine(report, PARSED) == expected
