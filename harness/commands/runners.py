"""`harness runner-key new|show` and `harness runners sign`: the keys runners sign with.

A runner's key signs each checkpoint it makes (trust/checkpoint.py); the owners list the
runners' public keys in `.harness/runners` and sign that file, so a clone without the
secret can tell a runner's record from a forgery (trust.md, "Runner keys and signed
checkpoints").
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.approve import passphrase
from harness.errors import InvalidInput, TrustFailure
from harness.record.visible import line
from harness.store.gitrepo import Repo, stored_bytes
from harness.trust.owners import OWNERS_FILE, load_owners, parse_owners, principals_for_key
from harness.trust.runnerkey import (
    ENV_RUNNER_KEY_FILE,
    RunnerKey,
    load_runner_key,
    new_runner_key,
    runner_key_file,
)
from harness.trust.runners import (
    RUNNERS_PATH,
    RUNNERS_SIG_PATH,
    SIGN_HINT,
    append_signature,
    statement_bytes,
)
from harness.trust.sshsig import sign, verify
from harness.trust.sshwire import public_key_line


def runner_key_new(cwd: Path, file: Path | None, env: Mapping[str, str], out: TextIO) -> int:
    try:
        root: Path | None = Repo.discover(cwd).root
    except InvalidInput:
        root = None
    path = (file or runner_key_file(env)).expanduser().absolute()
    key = new_runner_key(path, root)
    out.write(line(f"wrote a new runner key to {path} (mode 0600) and {path}.pub"))
    if file is not None:
        out.write(line(f"use it with: export {ENV_RUNNER_KEY_FILE}={path}"))
    _listing_advice(key, out)
    return 0


def runner_key_show(env: Mapping[str, str], out: TextIO) -> int:
    key = load_runner_key(env)
    if key is None:
        raise InvalidInput(
            f"{runner_key_file(env)}: no runner key here (expected one; "
            "`harness runner-key new` makes it)"
        )
    out.write(line(f"{key.path}: {key.fingerprint}"))
    _listing_advice(key, out)
    return 0


def _listing_advice(key: RunnerKey, out: TextIO) -> None:
    out.write(line(f"its line for {RUNNERS_PATH} (an owner adds it, then {SIGN_HINT}):"))
    out.write(line(f"runner@{socket.gethostname() or 'host'} {key.public_line}"))


def runners_sign(cwd: Path, key: Path, env: Mapping[str, str], out: TextIO) -> int:
    """Sign the checkout's `.harness/runners` with an owner's key: one more record in
    `.harness/runners.sig`. Nothing is written when the key is not an owner's."""
    repo = Repo.discover(cwd)
    path = repo.root / RUNNERS_PATH
    try:
        data = stored_bytes(repo.root, RUNNERS_PATH, path.read_bytes())
    except FileNotFoundError:
        raise InvalidInput(
            f"{RUNNERS_PATH}: missing in the checkout (expected the runners' lines, "
            "`<name> ssh-ed25519 AAAA…`, as `harness runner-key new` prints them)"
        ) from None
    listed = parse_owners(data.decode("utf-8", "replace"), RUNNERS_PATH)
    if not listed:
        raise InvalidInput(f"{RUNNERS_PATH}: lists no runner (expected at least one key line)")
    owners = load_owners(repo.root / OWNERS_FILE, OWNERS_FILE)
    statement = statement_bytes(data)
    armored = sign(statement, key, passphrase(env))
    signers = principals_for_key(owners, verify(statement, armored))
    if not signers:
        raise TrustFailure(
            f"{key}: not the key of an owner in {OWNERS_FILE} "
            f"({public_key_line(verify(statement, armored))}); nothing was written"
        )
    append_signature(repo.root / RUNNERS_SIG_PATH, statement, armored)
    names = ", ".join(p for runner in listed for p in runner.principals)
    out.write(
        line(f"signed {RUNNERS_PATH} ({len(listed)} runner(s): {names}) as {', '.join(signers)}")
    )
    out.write(line(f"next: commit {RUNNERS_PATH} and {RUNNERS_SIG_PATH} on the control branch"))
    return 0
