"""A test that needs a tool this machine lacks (bwrap that works, chromium, ssh-keygen, an
agent CLI, strace, …): skipped with the reason on a developer's machine, failed under CI.

CI is any non-empty `CI` (GitHub Actions and GitLab say `true`, other services other
values): there a skip would let the suite pass without running what it is meant to check.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import pytest

Test = TypeVar("Test", bound=Callable[..., Any])


def under_ci() -> bool:
    return bool(os.environ.get("CI"))


def need_tool(reason: str) -> NoReturn:
    """Skip saying `reason` (what is missing and how to get it); fail under CI."""
    if under_ci():
        pytest.fail(f"CI is set: {reason}; a missing tool is a failure there, not a skip")
    pytest.skip(reason)


def needs(check: Callable[[], str | None]) -> Callable[[Test], Test]:
    """A test decorator: `check` (what is missing, or None) runs with the test, not when it
    is collected, so a machine pays for a probe only when it runs a test that needs it."""

    def decorate(test: Test) -> Test:
        @functools.wraps(test)
        def checked(*args: Any, **kwargs: Any) -> Any:
            problem = check()
            if problem is not None:
                need_tool(problem)
            return test(*args, **kwargs)

        return checked  # type: ignore[return-value]

    return decorate


def missing_command(name: str, package: str | None = None) -> str | None:
    """Why `name` cannot be run here (not on PATH, with the package to install), or None."""
    if shutil.which(name) is not None:
        return None
    return f"needs {name} (apt-get install {package or name})"


@functools.cache
def bwrap_problem() -> str | None:
    """Why no step can be contained here (bwrap missing, or failing its probe), or None."""
    from harness.loop.contain.sandbox import probe

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "needs bubblewrap (apt-get install bubblewrap)"
    problem = probe(bwrap)
    return None if problem is None else f"bubblewrap does not work here: {problem}"


def contained_mode(bare: tuple[object, ...] | None) -> str:
    """The sandbox mode of a test that runs contained (tests/conftest.py, `contained_steps`):
    `off` for a test marked `bare(reason)` (the reason is required), else the suite's
    HARNESS_TEST_SANDBOX when set, else `required` where bwrap works. Without a working
    bwrap the steps run bare on a developer's machine and the test fails under CI."""
    if bare is not None:
        if len(bare) != 1 or not isinstance(bare[0], str) or not bare[0].strip():
            pytest.fail("pytest.mark.bare needs one reason: why this test's steps run bare")
        return "off"
    chosen = os.environ.get("HARNESS_TEST_SANDBOX")
    if chosen:
        return chosen
    problem = bwrap_problem()
    if problem is None:
        return "required"
    if under_ci():
        pytest.fail(f"CI is set: {problem}; the contained tests cannot run contained")
    return "off"


def needs_command(name: str, package: str | None = None) -> Callable[[Test], Test]:
    return needs(lambda: missing_command(name, package))


needs_bwrap = needs(bwrap_problem)
