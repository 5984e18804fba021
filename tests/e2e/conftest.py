"""Every end-to-end test runs its steps contained, as users run them (tests/conftest.py,
`contained_steps`: HARNESS_SANDBOX=required where bwrap works), unless it is marked
`bare("why")`: a test of what the harness does where no sandbox absorbs a step's writes.
Such a test has a contained twin where containment changes the outcome; the twin asks for
`contained` to run contained whatever HARNESS_TEST_SANDBOX says. A goal whose config names
its own `sandbox:` mode (test_sandbox.py, …) keeps it: the config wins over the runner."""

from __future__ import annotations

import pytest

from tests.tools import bwrap_problem, need_tool


@pytest.fixture(autouse=True)
def _contained(contained_steps: str) -> str:
    return contained_steps


@pytest.fixture
def contained(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's steps are contained (HARNESS_SANDBOX=required), even under
    HARNESS_TEST_SANDBOX=off: it checks what the sandbox does. Skipped without a working
    bwrap, failed under CI."""
    problem = bwrap_problem()
    if problem is not None:
        need_tool(problem)
    monkeypatch.setenv("HARNESS_SANDBOX", "required")
