"""agents.report: the report file is untrusted; bad values become None with the reason."""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.loop.agents import (
    MAX_REPORT_BYTES,
    MAX_SUMMARY_CHARS,
    Usage,
    combine,
    read_report_file,
)
from harness.loop.steps import child_env, run_step

NOTHING = Usage(None, None, None, None)
FIELD = "report file field ignored: "


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


# --- combining -----------------------------------------------------------------------

PARSED = Usage(2.0, 10, "from output", "error_max_turns", cost_scope="session", evidence="e")
REPORTED = "cost: the report file; e"


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        (None, PARSED),
        (NOTHING, PARSED),
        (
            Usage(0.5, 3, "from report", None),
            replace(
                PARSED,
                cost_usd=0.5,
                turns=3,
                summary="from report",
                cost_scope="process",
                evidence=REPORTED,
            ),
        ),
        (Usage(None, 4, None, None), replace(PARSED, turns=4)),
        (
            Usage(None, None, None, "report file ignored: not a JSON object"),
            replace(PARSED, error="report file ignored: not a JSON object; error_max_turns"),
        ),
        (
            Usage(0.0, 0, "", None),
            replace(
                PARSED, cost_usd=0.0, turns=0, summary="", cost_scope="process", evidence=REPORTED
            ),
        ),
    ],
)
def test_combine_report_wins_where_present(report: Usage | None, expected: Usage) -> None:
    assert combine(report, PARSED) == expected
