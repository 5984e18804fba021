"""Fixtures for the approval tests: real ssh-keygen keys and an owners list, made once."""

from __future__ import annotations

import pytest

from harness.trust.owners import Owner, parse_owners
from harness.trust.sshwire import public_key_line
from tests.trust.signing import OWNERS, Key, make_key


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Key]:
    folder = tmp_path_factory.mktemp("keys")
    return {
        "alice": make_key(folder, "alice", "-t", "ed25519", "-N", ""),
        "bob": make_key(folder, "bob", "-t", "ed25519", "-N", ""),
        "carol": make_key(folder, "carol", "-t", "ed25519", "-N", ""),
        "ecdsa": make_key(folder, "ecdsa", "-t", "ecdsa", "-b", "256", "-N", ""),
        "locked": make_key(folder, "locked", "-t", "ed25519", "-N", "sesame", "-a", "2"),
    }


@pytest.fixture(scope="session")
def owners(keys: dict[str, Key]) -> tuple[Owner, ...]:
    text = (
        f"alice@example.com {public_key_line(keys['alice'].blob)}\n"
        f"carol@example.com {public_key_line(keys['carol'].blob)}\n"
    )
    return parse_owners(text, OWNERS)
