"""`harness attest`: a shipped goal's record as in-toto attestations (docs/specs/attest.md).

Writes the JSON Lines bundle of DSSE envelopes the ship step was given as
`HARNESS_ATTESTATION`, byte for byte, from the record: SLSA provenance, the judge's
test-result and the goal run, signed by this runner's key, and the owner's ship decision
as the owner signed it. The record is read as `replay` reads it: with the secret, every
MAC checked; without, only a record whose head a listed runner signed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.commands.remote_goal import goal_ledger, open_reading
from harness.errors import TrustFailure
from harness.loop.context import checkpoint_key
from harness.loop.control import Control
from harness.record.unverified import UnverifiedLedger
from harness.record.visible import line
from harness.store.fsutil import atomic_write
from harness.trust.runnerkey import RunnerKey, runner_key_file


def attest(
    cwd: Path,
    goal_id: str,
    out_file: Path | None,
    env: Mapping[str, str],
    out: BinaryIO,
    err: TextIO = sys.stderr,
) -> int:
    from harness.loop.attest import make_bundle
    from harness.trust.intoto import require_attest

    require_attest()
    with open_reading(cwd, env, [goal_id]) as s:
        key = _runner_key(env, s.control)
        with goal_ledger(s, goal_id, err) as (ledger, _):
            if isinstance(ledger, UnverifiedLedger) and ledger.signed is None:
                raise TrustFailure(
                    f"goal {goal_id}: no secret here and no listed runner signed the record: "
                    "an attestation is made only from a record this machine can verify"
                )
            records = list(ledger.records())
        made = make_bundle(s.control, records, goal_id, s.repo.root, key)
    for note in made.notes:
        err.write(line(f"harness: {goal_id}: {note}"))
    if out_file is None:
        _write_bundle(made.data, out)
    else:
        atomic_write(out_file, made.data)
        count = len(made.data.splitlines())
        err.write(line(f"wrote {out_file}: {count} envelopes for {made.ship_commit}"))
    return 0


def _write_bundle(data: bytes, out: BinaryIO) -> None:
    """The bundle to stdout, as written to a file: ASCII alone (base64 payloads and
    signatures, hex keyids), so nothing in it is a terminal's control character."""
    out.write(data)


def _runner_key(env: Mapping[str, str], control: Control) -> RunnerKey:
    """This machine's runner key (listed, where the owners list runners); exit 3 without."""
    key = checkpoint_key(env, control)
    if key is None:
        raise TrustFailure(
            "this machine has no runner key, and the runner's key signs the attestations: "
            f"run `harness runner-key new` (it writes {runner_key_file(env)}) and have an "
            "owner list it in .harness/runners"
        )
    return key
