"""`harness init`, in this process: run again it keeps what is there and adds nothing twice;
bad options are refused before anything is written."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.commands.init import IGNORE_LINE, init
from harness.errors import InvalidInput
from tests.managed import Key, git


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(root))
    (root / ".gitignore").write_text("__pycache__/")  # the user's, without a last newline
    return root


def test_init_twice_keeps_everything_and_adds_nothing_again(repo: Path, owner_key: Key) -> None:
    first = io.StringIO()
    assert init(repo, "me@example.com", owner_key.public, first) == 0
    made = _files(repo)
    assert made[".gitignore"] == f"__pycache__/\n{IGNORE_LINE}\n".encode()
    owners = made[".harness/owners"].decode().splitlines()
    assert owners[-1] == f"me@example.com {owner_key.public}"
    assert "added owner me@example.com to" in first.getvalue()

    again = io.StringIO()
    assert init(repo, "me@example.com", owner_key.public, again) == 0
    assert _files(repo) == made
    said = again.getvalue()
    assert "wrote" not in said and "added" not in said
    assert f"kept {repo / '.harness' / 'config.yaml'}" in said and "kept .gitkeep" in said


@pytest.mark.parametrize(
    ("owner", "key", "message"),
    [
        ("me@example.com", None, "--owner and --key go together (expected both or neither)"),
        (None, "ssh-ed25519 AAAA", "--owner and --key go together (expected both or neither)"),
        (
            "me and you",
            "ssh-ed25519 AAAA",
            "--owner: 'me and you' (expected a principal without spaces, like alice@example.com)",
        ),
    ],
)
def test_bad_owner_options_write_nothing(
    repo: Path, owner: str | None, key: str | None, message: str
) -> None:
    before = _files(repo)
    with pytest.raises(InvalidInput) as caught:
        init(repo, owner, key, io.StringIO())
    assert str(caught.value) == message
    assert _files(repo) == before
