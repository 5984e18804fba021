"""`harness run` without click (harness/entry.py): the plain forms it takes must mean
exactly what click makes of them, everything else goes to click, and an error reads and
exits the same either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import cli
from harness.entry import PlainRun, plain_run

TOKENS = [
    "g1",
    "fix-login",
    "",
    "Ünïcode",
    "--max-steps",
    "3",
    "03",
    "0",
    "-1",
    "+2",
    " 4",
    "x",
    "٣",
    "--push",
    "origin",
    "--jobs",
    "2",
    "--json",
    "--json=1",
    "--max-steps=4",
    "--push=origin",
    "--push=",
    "--jobs=",
    "--help",
    "-h",
    "--serve-fd",
    "--",
    "-",
    "--max",
    "-j",
]


def _click_params(args: list[str]) -> dict[str, Any] | None:
    """What click hands the `run` command for `args`, or None when it refuses them."""
    command = cli.commands["run"]
    try:
        with command.make_context("run", list(args)) as ctx:
            return dict(ctx.params)
    except (click.exceptions.Exit, click.ClickException):
        return None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=6))
def test_a_plain_form_means_what_click_makes_of_it(args: list[str]) -> None:
    plain = plain_run(["run", *args])
    if plain is None:
        return  # click's to parse (and to refuse with its own message)
    params = _click_params(args)
    assert params is not None, f"click refuses {args} but plain_run took it"
    assert params == {
        "goal_ids": plain.goal_ids,
        "max_steps": plain.max_steps,
        "push": plain.push,
        "jobs": plain.jobs,
        "as_json": plain.as_json,
        "serve_fd": None,
    }


def test_the_forms_cron_and_ci_use_are_plain_and_the_rest_are_not() -> None:
    assert plain_run(["run"]) == PlainRun()
    assert plain_run(["run", "--push", "origin", "a", "b"]) == PlainRun(("a", "b"), push="origin")
    assert plain_run(["run", "--jobs=4", "--max-steps", "20", "--json"]) == PlainRun(
        max_steps=20, jobs=4, as_json=True
    )
    for other in (
        [],
        ["status"],
        ["--version"],
        ["run", "--help"],
        ["run", "-h"],
        ["run", "--serve-fd", "5"],
        ["run", "--jobs", "2", "--jobs", "3"],
        ["run", "--max-steps"],
        ["run", "--max-steps", "-1"],
        ["run", "--", "g1"],
    ):
        assert plain_run(other) is None, other


def _harness(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
    )
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    return proc.returncode, "\n".join(lines), "click" if "click" in imported else ""


def test_a_plain_run_does_not_import_click_and_errs_as_the_click_path_does(
    tmp_path: Path,
) -> None:
    # Outside a repository: the same line and exit code whichever path parsed the command
    # (`--jobs 1` twice is not plain, so click parses it, to the same meaning).
    plain = _harness(tmp_path, "run")
    parsed = _harness(tmp_path, "run", "--jobs", "1", "--jobs", "1")
    assert plain[:2] == parsed[:2]
    assert plain[0] == 2 and "not inside a git repository" in plain[1], plain
    assert (plain[2], parsed[2]) == ("", "click")
    # A usage mistake is click's to name, as before.
    code, err, imported = _harness(tmp_path, "run", "--max-steps")
    assert (code, imported) == (2, "click") and "requires an argument" in err
