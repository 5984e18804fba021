"""Every attack here runs twice: its steps contained, as users run them (tests/conftest.py,
`contained_steps`: HARNESS_SANDBOX=required where bwrap works, unless a test is marked
`bare("why")`), and bare (HARNESS_SANDBOX=off), since each defence outside the sandbox must
hold without it too. A module whose goals name their own `sandbox:` mode sets
`NAMES_ITS_SANDBOX_MODE = True` and runs once (test_sandbox.py's probes, on and off)."""

from __future__ import annotations

import pytest


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not getattr(metafunc.module, "NAMES_ITS_SANDBOX_MODE", False):
        metafunc.parametrize("_sandbox_mode", ["contained", "bare"], indirect=True)


@pytest.fixture(autouse=True)
def _sandbox_mode(
    request: pytest.FixtureRequest, contained_steps: str, monkeypatch: pytest.MonkeyPatch
) -> str:
    if getattr(request, "param", "contained") == "bare":
        monkeypatch.setenv("HARNESS_SANDBOX", "off")
        return "off"
    return contained_steps
