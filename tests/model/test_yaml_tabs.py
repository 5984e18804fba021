"""A tab in YAML indentation: one line naming the file, the line and what to do, in goal,
config and lesson files alike, and through `harness check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InvalidInput
from harness.model.config import DEFAULT_CONFIG, parse_config
from harness.model.goal import parse_goal
from harness.model.lessons import parse_lesson
from tests.managed import ManagedFactory

TABBED_GOAL = b"version: 1\nid: g1\nbuild:\n\trun: [make]\n"
TABBED_CONFIG = b"version: 1\ndefaults:\n  budget:\n  \tmax_iterations: 3\n"
TABBED_LESSON = b"version: 1\nwhen:\n\t- pytest\n"
TAB = "indented with a tab (expected indentation with spaces)"


def _message(call: object) -> str:
    assert callable(call)
    with pytest.raises(InvalidInput) as caught:
        call()
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_goal_config_and_lesson_name_the_tabbed_line() -> None:
    goal = _message(lambda: parse_goal(TABBED_GOAL, "goals/g1.yaml", "g1", DEFAULT_CONFIG.defaults))
    assert goal == f"goals/g1.yaml: line 4: {TAB}"
    config = _message(lambda: parse_config(TABBED_CONFIG, ".harness/config.yaml"))
    assert config == f".harness/config.yaml: line 4: {TAB}"
    lesson = _message(lambda: parse_lesson(TABBED_LESSON, "lessons/pytest.yaml", "pytest"))
    assert lesson == f"lessons/pytest.yaml: line 3: {TAB}"


def test_a_tab_inside_a_block_scalar_is_still_text() -> None:
    data = b"a: |\n  ok\n  \tindented text\n"
    from harness.model.yamlutil import load_yaml

    assert load_yaml(data, "x.yaml") == {"a": "ok\n\tindented text\n"}


def test_other_yaml_errors_keep_their_words() -> None:
    from harness.model.yamlutil import load_yaml

    message = _message(lambda: load_yaml(b"a: [1\n", "x.yaml"))
    assert "expected ',' or ']'" in message


def test_check_reports_the_tab(managed: ManagedFactory) -> None:
    repo = managed(approve=False)  # a changed file fails its approval too (exit 3)
    path = repo.root / "goals" / "g1.yaml"
    path.write_bytes(path.read_bytes().replace(b"\n  run:", b"\n\trun:", 1))
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "check"],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert any(line.endswith(f"goals/g1.yaml: line {_tab_line(path)}: {TAB}") for line in lines), (
        proc.stderr
    )


def _tab_line(path: Path) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if "\t" in line)
