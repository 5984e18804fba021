"""One error tree. Each subclass carries the exit code the CLI returns for it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class HarnessError(Exception):
    """Base of every error the harness reports to a user as one line."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidInput(HarnessError):
    """Bad input or usage: names the file, the key path and what was expected (exit 2)."""

    exit_code = 2


class TrustFailure(HarnessError):
    """Something that must be trusted is not: fail closed (exit 3)."""

    exit_code = 3


class Busy(HarnessError):
    """Another process holds the goal (exit 4)."""

    exit_code = 4


def located(file: str, key: str, problem: str, expected: str | None = None) -> str:
    """The one shape of an input error: `file: key: problem (expected ...)`."""
    where = f"{file}: {key}" if key else file
    tail = f" (expected {expected})" if expected else ""
    return f"{where}: {problem}{tail}"


def invalid(file: str, key: str, problem: str, expected: str | None = None) -> InvalidInput:
    return InvalidInput(located(file, key, problem, expected))


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: stop promptly, leaving the goal resumable."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Interrupted` (once): the running step's group is ended by
    `steps.run_step`, the interruption is recorded, and the goal is left resumable."""
    fired = False

    def handler(signum: int, frame: object) -> None:
        nonlocal fired
        if not fired:
            fired = True
            raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class StorageFailure(HarnessError):
    """A write failed (disk full, I/O error): nothing half-written was kept (exit 1)."""

    exit_code = 1
