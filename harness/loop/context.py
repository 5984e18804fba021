"""What one `harness run` (or decision) hands every goal it advances."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from harness.errors import TrustFailure
from harness.loop.clock import Clock
from harness.loop.control import Control
from harness.store.remote import Remote
from harness.trust.redact import Redactor
from harness.trust.runnerkey import RunnerKey, load_runner_key, runner_key_file
from harness.trust.runners import RUNNERS_PATH, SIGN_HINT
from harness.trust.secret import Secret

if TYPE_CHECKING:
    from harness.loop.otel import LiveTrace
    from harness.trust.approvals import SignedRecord


@dataclass(frozen=True)
class Pending:
    """A decision signed on this machine and acted on at once (`harness ship` with the
    secret), not on the control ref yet: its record and its envelope's line, for the
    attestation its ship step gets (`loop/attest.py`)."""

    records: tuple[SignedRecord, ...] = ()
    envelopes: bytes = b""


@dataclass(frozen=True)
class RunContext:
    control: Control
    secret: Secret
    clock: Clock
    print_line: Callable[[str], None]
    base_env: Mapping[str, str]
    max_steps: int | None = None
    remote: Remote | None = None
    runner: str = ""
    progress: TextIO | None = None  # a terminal to show the running step on
    trace: LiveTrace | None = None  # live export of spans (loop/otel.py), when asked for
    pending: Pending = field(default_factory=Pending)

    @functools.cached_property
    def redactor(self) -> Redactor:
        """The one redactor for what this run records and prints: the secrets the steps
        receive (names that say secret, and the config's `redact_env`) and token shapes."""
        return Redactor.for_env(self.base_env, self.control.config.redacted())

    @functools.cached_property
    def runner_key(self) -> RunnerKey | None:
        """The key this run signs its checkpoints with (asked before a goal moves)."""
        return checkpoint_key(self.base_env, self.control)


def checkpoint_key(env: Mapping[str, str], control: Control) -> RunnerKey | None:
    """This machine's runner key, which signs every checkpoint it makes; None where it has
    none and the owners list no runners. Where `.harness/runners` is on the control ref,
    a machine that writes records must be listed there, or a clone without the secret
    could not tell its records from a forgery: refused (exit 3) before anything is written."""
    key = load_runner_key(env)
    runners = control.runners()
    if runners is None:
        return key
    if key is None:
        raise TrustFailure(
            f"this machine has no runner key, and {RUNNERS_PATH} lists the runners whose "
            f"records clones trust: run `harness runner-key new` (it writes "
            f"{runner_key_file(env)}), then an owner adds the line it prints to {RUNNERS_PATH}, "
            f"signs it with {SIGN_HINT} and commits"
        )
    if not any(runner.key_blob == key.public_blob for runner in runners):
        raise TrustFailure(
            f"{key.path}: this runner's key ({key.fingerprint}) is not in {RUNNERS_PATH}: an "
            f"owner adds `<name> {key.public_line}` to it, signs it with {SIGN_HINT} and "
            "commits; until then this machine writes no record"
        )
    return key
