"""`harness secret new`: a new secret printed for a CI store, or written to a file of its own
(mode 0600, never inside the repository, never over an existing one), in this process."""

from __future__ import annotations

import io
import re
import stat
from pathlib import Path

import pytest

from harness.commands.secret import secret_new
from harness.errors import InvalidInput
from tests.managed import git

HEX_SECRET = re.compile(r"[0-9a-f]{64}\n")


def test_print_writes_the_secret_to_stdout_and_no_file(tmp_path: Path) -> None:
    out = io.StringIO()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert secret_new(tmp_path, None, True, env, out) == 0
    assert HEX_SECRET.fullmatch(out.getvalue())
    assert not (tmp_path / "config").exists()


def test_print_and_file_together_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = io.StringIO()
    with pytest.raises(InvalidInput, match="--print and --file: choose one"):
        secret_new(tmp_path, tmp_path / "secret", True, {}, out)
    assert out.getvalue() == ""
    assert not (tmp_path / "secret").exists()


def test_a_file_outside_any_repository_is_made_private(tmp_path: Path) -> None:
    out = io.StringIO()
    target = tmp_path / "keys" / "secret"
    assert secret_new(tmp_path, target, False, {}, out) == 0
    assert HEX_SECRET.fullmatch(target.read_text())
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert out.getvalue() == (
        f"wrote a new secret to {target} (mode 0600)\n"
        f"use it with: export HARNESS_SECRET_FILE={target}\n"
    )


def test_an_existing_secret_is_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    target.write_text("the secret a runner already uses\n")
    with pytest.raises(InvalidInput, match="a secret file already exists; remove it first"):
        secret_new(tmp_path, target, False, {}, io.StringIO())
    assert target.read_text() == "the secret a runner already uses\n"


def test_a_file_inside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    target = repo / "config" / "secret"
    with pytest.raises(InvalidInput, match="the secret file must be outside the repository"):
        secret_new(repo, target, False, {}, io.StringIO())
    assert not target.parent.exists()
