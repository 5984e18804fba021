"""`harness secret new`: a new random secret, kept outside the repository."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.reviewer import COPY_ADVICE, recorded_goals
from harness.errors import InvalidInput, TrustFailure
from harness.record.visible import line
from harness.store.gitrepo import Repo
from harness.trust.secret import default_secret_file, new_secret_text, write_secret_file


def secret_new(
    cwd: Path,
    file: Path | None,
    print_only: bool,
    env: Mapping[str, str],
    out: TextIO,
    force: bool = False,
) -> int:
    if print_only:
        if file is not None:
            raise InvalidInput(
                "--print and --file: choose one (print for a CI secret store, or a file)"
            )
        out.write(line(new_secret_text()))
        return 0
    try:
        repo: Repo | None = Repo.discover(cwd)
    except InvalidInput:
        repo = None
    root = repo.root if repo is not None else None
    reviewed = recorded_goals(repo) if repo is not None and not force else []
    if reviewed:
        shown = ", ".join(reviewed[:5]) + (" …" if len(reviewed) > 5 else "")
        raise TrustFailure(
            f"{root}: this clone holds records of {shown} made with a runner's secret; "
            f"{COPY_ADVICE} "
            "(or `harness secret new --force` to start anew anyway; nothing was written)"
        )
    target = (file or default_secret_file(env)).expanduser().absolute()
    write_secret_file(target, root)
    out.write(line(f"wrote a new secret to {target} (mode 0600)"))
    if file is not None:
        out.write(line(f"use it with: export HARNESS_SECRET_FILE={target}"))
    return 0
