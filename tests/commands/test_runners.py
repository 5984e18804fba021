"""`harness runner-key new|show`, `harness runners sign`, and doctor's and check's view of
the runners, in-process on real repositories: each refusal names the file and what was
expected, and writes nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.commands.check import check
from harness.commands.doctor import doctor
from harness.commands.runners import runner_key_new, runner_key_show, runners_sign
from harness.errors import InvalidInput, TrustFailure
from harness.record.unverified import last_line_position
from harness.trust.runnerkey import ENV_RUNNER_KEY_FILE
from tests.managed import ManagedFactory, ManagedRepo, git, make_key


def _key_env(tmp_path: Path) -> dict[str, str]:
    return {ENV_RUNNER_KEY_FILE: str(tmp_path / "keys" / "runner-key")}


def test_runner_key_new_with_a_file_says_how_to_use_it(tmp_path: Path) -> None:
    out = io.StringIO()
    key = tmp_path / "elsewhere" / "key"
    assert runner_key_new(tmp_path, key, {"XDG_CONFIG_HOME": str(tmp_path)}, out) == 0
    said = out.getvalue().splitlines()
    assert said[1] == f"use it with: export HARNESS_RUNNER_KEY_FILE={key}"
    assert said[-1].startswith("runner@") and " ssh-ed25519 AAAA" in said[-1]


def test_runner_key_show_names_a_missing_key(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    with pytest.raises(InvalidInput, match=r"runner-key: no runner key here \(expected one; "):
        runner_key_show(env, io.StringIO())
    env = _key_env(tmp_path)
    runner_key_new(tmp_path, None, env, io.StringIO())
    out = io.StringIO()
    assert runner_key_show(env, out) == 0
    assert out.getvalue().startswith(f"{tmp_path / 'keys' / 'runner-key'}: SHA256:")


def test_runners_sign_refuses_a_missing_or_empty_list(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    key = repo.key.private
    with pytest.raises(InvalidInput, match=r"\.harness/runners: missing in the checkout"):
        runners_sign(repo.root, key, repo.env, io.StringIO())
    (repo.root / ".harness" / "runners").write_text("# no runner yet\n")
    with pytest.raises(InvalidInput, match=r"\.harness/runners: lists no runner"):
        runners_sign(repo.root, key, repo.env, io.StringIO())
    assert not (repo.root / ".harness" / "runners.sig").exists()


def test_runners_sign_by_a_key_that_is_no_owners_writes_nothing(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed()
    stranger = make_key(tmp_path / "stranger", "k")
    (repo.root / ".harness" / "runners").write_text(f"runner-1 {stranger.public}\n")
    with pytest.raises(TrustFailure, match=r"not the key of an owner in \.harness/owners"):
        runners_sign(repo.root, stranger.private, repo.env, io.StringIO())
    assert not (repo.root / ".harness" / "runners.sig").exists()


def test_doctor_fails_a_runners_list_no_owner_signed(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed()
    (repo.root / ".harness" / "runners").write_text(f"runner-1 {repo.key.public}\n")
    git(repo.root, "add", ".harness")
    git(repo.root, "commit", "-qm", "a runners list nobody signed")
    out = io.StringIO()
    assert doctor(repo.root, repo.env, out, False) == 3
    [line] = [r for r in out.getvalue().splitlines() if r.startswith("fail runners: ")]
    assert ".harness/runners: not signed by an owner" in line
    checked = io.StringIO()
    assert check(repo.root, [], checked) == 3
    assert "no owner has signed its bytes" in checked.getvalue()


def test_doctor_names_a_runner_key_that_cannot_be_read(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed()
    env = repo.env | {ENV_RUNNER_KEY_FILE: str(tmp_path / "gone")}
    out = io.StringIO()
    assert doctor(repo.root, env, out, False) == 3
    assert "fail runner-key: HARNESS_RUNNER_KEY_FILE: " in out.getvalue()


def test_the_last_line_of_a_ledger_is_read_from_its_end_alone(tmp_path: Path) -> None:
    events = tmp_path / "events"
    assert last_line_position(events) is None
    events.mkdir()
    assert last_line_position(events) is None
    (events / "000001.jsonl").write_bytes(b'{"e":{"seq":1},"mac":"x"}\n{"e":{"seq":2')
    head = last_line_position(events)
    assert head is not None and head.seq == 1  # a torn last line is not the head
    (events / "000001.jsonl").write_bytes(b"not json\n")
    assert last_line_position(events) is None
    (events / "000001.jsonl").write_bytes(b"x" * 300_000 + b"\n")
    assert last_line_position(events) is None  # no whole line in the end read
