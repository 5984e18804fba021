"""The config cache: a parsed config is reused only when the secret vouches for it."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
from pathlib import Path

import pytest

import harness
from harness.errors import InvalidInput
from harness.model import cache as cache_module
from harness.model.config import config_cache, parse_config
from harness.store.fsutil import canonical_json
from harness.trust.secret import Secret
from tests.managed import SECRET, ManagedFactory, git

SOURCE = ".harness/config.yaml"
CONFIG = b"branch_prefix: team/\ndefaults:\n  budget:\n    max_iterations: 2\n"
KEY = Secret(SECRET.encode()).cache_key()
SCHEMA_FILE = Path(harness.__file__).parent / "model" / "schema" / "config.schema.json"


def entry_path(folder: Path, data: bytes) -> Path:
    return folder / f"config-{hashlib.sha256(data).hexdigest()}.json"


def test_a_parsed_config_is_remembered_under_its_sha256_with_a_mac(tmp_path: Path) -> None:
    cache = config_cache(tmp_path, KEY)
    config = parse_config(CONFIG, SOURCE, cache)
    entry = json.loads(entry_path(tmp_path, CONFIG).read_bytes())
    raw = {"branch_prefix": "team/", "defaults": {"budget": {"max_iterations": 2}}}
    assert entry["raw"] == raw
    # The documented MAC, recomputed here independently of the code that made it.
    digest = hashlib.sha256(CONFIG).hexdigest().encode()
    schema = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest().encode()
    label, version = b"goal-harness config-cache v1", harness.__version__.encode()
    signed = b"\x00".join([label, version, schema, digest, canonical_json(raw)])
    assert entry["mac"] == hmac.new(KEY, signed, hashlib.sha256).hexdigest()
    assert parse_config(CONFIG, SOURCE, cache) == config == parse_config(CONFIG, SOURCE)


def test_an_entry_is_used_only_with_its_mac_and_for_its_own_bytes(tmp_path: Path) -> None:
    cache = config_cache(tmp_path, KEY)
    forged = {"branch_prefix": "forged/"}
    config_cache(tmp_path, b"an attacker's own key, not the secret").remember(CONFIG, forged)
    assert cache.recall(CONFIG) is None
    assert parse_config(CONFIG, SOURCE, cache).branch_prefix == "team/"  # parsed again...
    assert cache.recall(CONFIG) is not None  # ...and remembered properly
    # A valid entry for other bytes, copied under this file's name, is not this file's.
    other = b"branch_prefix: other/\n"
    parse_config(other, SOURCE, cache)
    entry_path(tmp_path, CONFIG).write_bytes(entry_path(tmp_path, other).read_bytes())
    assert cache.recall(CONFIG) is None
    assert parse_config(CONFIG, SOURCE, cache).branch_prefix == "team/"
    for garbage in (b"", b"{", b"[]", b'{"raw": [], "mac": "00"}', b'{"raw": {}}', b"\xff"):
        entry_path(tmp_path, CONFIG).write_bytes(garbage)
        assert cache.recall(CONFIG) is None
        assert parse_config(CONFIG, SOURCE, cache).branch_prefix == "team/"


def test_an_entry_that_is_not_a_small_regular_file_is_not_read(tmp_path: Path) -> None:
    """The agent can write the cache folder: a FIFO must not hang a run (O_NONBLOCK), a link
    to an endless file must not be read (O_NOFOLLOW), nor an oversized entry."""
    cache = config_cache(tmp_path, KEY)
    path = entry_path(tmp_path, CONFIG)
    os.mkfifo(path)
    assert cache.recall(CONFIG) is None
    path.unlink()
    path.symlink_to("/dev/zero")
    assert cache.recall(CONFIG) is None
    path.unlink()
    parse_config(CONFIG, SOURCE, cache)
    path.write_bytes(path.read_bytes() + b" " * (2 * 1024 * 1024))
    assert cache.recall(CONFIG) is None
    assert parse_config(CONFIG, SOURCE, cache).branch_prefix == "team/"


def test_an_entry_made_under_another_schema_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an upgrade that changes the schema, old entries must be validated again (the
    schema file cannot be changed in place here without affecting other tests)."""
    cache = config_cache(tmp_path, KEY)
    with monkeypatch.context() as patched:
        patched.setattr(cache_module, "schema_sha256", lambda name: "0" * 64)
        cache.remember(CONFIG, {"branch_prefix": "old-schema/"})
        assert cache.recall(CONFIG) == {"branch_prefix": "old-schema/"}
    assert cache.recall(CONFIG) is None
    assert parse_config(CONFIG, SOURCE, cache).branch_prefix == "team/"


def test_an_invalid_config_is_never_remembered_and_an_edit_is_read_afresh(tmp_path: Path) -> None:
    cache = config_cache(tmp_path, KEY)
    parse_config(CONFIG, SOURCE, cache)
    broken = CONFIG.replace(b"max_iterations: 2", b"max_iterations: -1")
    with pytest.raises(InvalidInput, match=r"defaults\.budget\.max_iterations"):
        parse_config(broken, SOURCE, cache)
    assert not entry_path(tmp_path, broken).exists()
    with pytest.raises(InvalidInput, match=r"defaults\.budget\.max_iterations"):
        parse_config(broken, SOURCE, cache)


def test_the_cache_keeps_the_newest_few_and_tolerates_an_unwritable_folder(
    tmp_path: Path,
) -> None:
    cache = config_cache(tmp_path / "cache", KEY)
    texts = [f"branch_prefix: p{n}/\n".encode() for n in range(7)]
    for n, text in enumerate(texts):
        parse_config(text, SOURCE, cache)
        os.utime(entry_path(cache.folder, text), (1_000_000 + n, 1_000_000 + n))
    kept = sorted(p.name for p in cache.folder.glob("config-*.json"))
    assert kept == sorted(entry_path(cache.folder, t).name for t in texts[-cache.keep :])
    blocked = config_cache(tmp_path / "a-file", KEY)
    blocked.folder.write_text("not a folder")
    assert parse_config(CONFIG, SOURCE, blocked).branch_prefix == "team/"


def test_run_trusts_only_an_entry_the_secret_vouches_for(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """End to end: a forged entry for the committed config (the agent can write .git/harness)
    is ignored; one made with the secret's key is what the harness itself would have written."""
    repo = managed(files={SOURCE: CONFIG.decode()})
    folder = repo.root / ".git" / "harness" / "cache"
    config_cache(folder, b"the agent does not know the secret").remember(
        CONFIG, {"branch_prefix": "forged/"}
    )
    repo.harness("run", "--max-steps", "1", check=0)
    branches = git(repo.root, "branch", "--list", "--format=%(refname:short)").split()
    assert "team/g1" in branches and "forged/g1" not in branches
    assert config_cache(folder, KEY).recall(CONFIG) == {
        "branch_prefix": "team/",
        "defaults": {"budget": {"max_iterations": 2}},
    }
    # The control: the same entry made with the secret's key is used as it stands.
    (repo.root / ".harness" / "worktrees").rename(tmp_path / "old-worktrees")
    git(repo.root, "worktree", "prune")
    # The goal starts afresh under another prefix: its record here is retired on purpose
    # (else the marker names team/g1's record as lost: cli.md, "A lost record").
    shutil.rmtree(repo.root / ".git" / "harness" / "records")
    config_cache(folder, KEY).remember(CONFIG, {"branch_prefix": "vouched/"})
    repo.harness("run", "--max-steps", "1", check=0)
    branches = git(repo.root, "branch", "--list", "--format=%(refname:short)").split()
    assert "vouched/g1" in branches


def test_verify_and_replay_work_where_the_cache_cannot_be_written(
    managed: ManagedFactory,
) -> None:
    """An auditor's copy may not let the harness write into .git: the cache is optional."""
    repo = managed(files={SOURCE: CONFIG.decode()})
    repo.harness("run", "--max-steps", "2", check=0)
    state = repo.root / ".git" / "harness"
    shutil.rmtree(state)
    state.write_text("not a folder: nothing can be created below it\n")
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")
    replayed = repo.harness("replay", "g1", check=0).stdout
    assert "build[1] started" in replayed
