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
        # The runner's default when a config names no `sandbox:`: bare for the unit tests.
        # The guarantee, attack and end-to-end tests run contained, as users run
        # (`contained_steps` below; tests/e2e/conftest.py), each but those marked
        # `bare("why")`; HARNESS_TEST_SANDBOX=auto (or off) sets the mode of the whole
        # suite instead.
        "HARNESS_SANDBOX": os.environ.get("HARNESS_TEST_SANDBOX", "off"),
        "XDG_STATE_HOME": tempfile.mkdtemp(prefix="harness-test-state-"),
    }
)
for _name in ("HARNESS_SECRET", "HARNESS_SECRET_FILE", "HARNESS_FAILPOINT"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402

from tests.eventdata import ledger_problems  # noqa: E402
from tests.managed import Key, ManagedFactory, ManagedRepo, make_key  # noqa: E402
from tests.tools import contained_mode  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "bare(reason): run this contained test's steps bare (HARNESS_SANDBOX=off), saying why",
    )


@pytest.fixture(autouse=True)
def _unmeasured_subprocesses(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module that says `UNMEASURED_SUBPROCESSES = "why"` starts its harness processes
    without coverage (scripts/test measures every other one): its runs repeat paths the rest
    of the suite covers, and coverage's start would cost a third of their time. Coverage
    then reports less than ran, never more; its floor holds without them."""
    if getattr(request.module, "UNMEASURED_SUBPROCESSES", None):
        for name in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def contained_steps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The harness processes this test starts contain their steps: HARNESS_SANDBOX is
    `required` for the test (in os.environ, which every repository's env is made from),
    unless the test is marked `bare("why")`. Used by tests/test_guarantees.py, tests/attacks
    and tests/e2e (their conftest.py); the mode it set is returned."""
    marker = request.node.get_closest_marker("bare")
    mode = contained_mode(None if marker is None else marker.args)
    monkeypatch.setenv("HARNESS_SANDBOX", mode)
    return mode


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
