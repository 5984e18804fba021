"""Shared fixtures: real temporary git repositories, real keys, real subprocess agents."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Fixed identities and dates, set before harness (and git) ever runs in this process.
os.environ.update(
    {
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "XDG_CONFIG_HOME": tempfile.mkdtemp(prefix="harness-test-config-"),
        # The runner's default when a config names no `sandbox:`. The suite's scripted
        # agents keep counters outside the repository, which a contained step cannot
        # write; tests/attacks/test_sandbox.py and tests/loop/test_sandbox.py turn it on.
        # HARNESS_TEST_SANDBOX=auto runs the rest of the suite contained, to try it.
        "HARNESS_SANDBOX": os.environ.get("HARNESS_TEST_SANDBOX", "off"),
        "XDG_STATE_HOME": tempfile.mkdtemp(prefix="harness-test-state-"),
    }
)
for _name in ("HARNESS_SECRET", "HARNESS_SECRET_FILE", "HARNESS_FAILPOINT"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402

from tests.eventdata import ledger_problems  # noqa: E402
from tests.managed import Key, ManagedFactory, ManagedRepo, make_key  # noqa: E402


@pytest.fixture
def owner_key(tmp_path_factory: pytest.TempPathFactory) -> Key:
    return make_key(tmp_path_factory.mktemp("keys"), "owner")


@pytest.fixture
def managed(tmp_path: Path, owner_key: Key) -> Iterator[ManagedFactory]:
    """A factory: managed(goal=..., files=...) -> an approved, committed ManagedRepo."""

    def factory(**kwargs: Any) -> ManagedRepo:
        return ManagedRepo.create(tmp_path / "repo", owner_key, **kwargs)

    yield factory
    # Whatever the test made the harness record must match the declared event data.
    assert ledger_problems(tmp_path / "repo") == []
