"""`harness doctor`: can this machine and repository run goals? Says how to fix what not.

Each check prints `ok|warn|fail <check>: <finding>`, and a `fix:` line for a warning or a
failure. Doctor changes nothing in the repository: it reads files, asks git, and probes
lock files. The secret's value is never printed, only where it came from and its length.

Exit: 0 when nothing failed; 3 when a failure is a trust problem (no usable secret, a
secret that does not match the goal records, an approval that does not verify, a worktree
on the wrong branch), which `harness run` would refuse with 3 too; else 2.

The checks live by the banner they print under: `machine`, `secret_checks`, `repository`,
`worktrees`, `runner_checks`, `notify_checks`; `findings` is what each returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from harness.commands.doctor.findings import FAIL, OK, WARN, Finding
from harness.commands.doctor.machine import (
    agent_check,
    git_version,
    parse_git_version,
    python_check,
    sandbox_check,
    ssh_keygen,
)
from harness.commands.doctor.notify_checks import checked_url, notify_checks
from harness.commands.doctor.repository import config_check, repository, repository_checks
from harness.commands.doctor.runner_checks import runner_checks
from harness.commands.doctor.secret_checks import reviewer_clone, secret_check, secret_file
from harness.errors import InvalidInput, TrustFailure
from harness.loop.agents.support import SUPPORTED
from harness.record.visible import line

__all__ = ["Finding", "doctor", "exit_code", "parse_git_version", "run_checks"]


def doctor(
    cwd: Path, env: Mapping[str, str], out: TextIO, as_json: bool, notify_url: str | None = None
) -> int:
    findings = run_checks(cwd, env, checked_url(notify_url))
    if as_json:
        out.write(json.dumps([f.as_dict() for f in findings], indent=2) + "\n")
    else:
        out.writelines(_text(f) for f in findings)
        counts = {s: sum(f.status == s for f in findings) for s in (OK, WARN, FAIL)}
        out.write(line(f"doctor: {counts[OK]} ok, {counts[WARN]} warn, {counts[FAIL]} fail"))
    return exit_code(findings)


def exit_code(findings: list[Finding]) -> int:
    codes = {f.exit_code for f in findings if f.status == FAIL}
    if TrustFailure.exit_code in codes:
        return TrustFailure.exit_code
    return InvalidInput.exit_code if codes else 0


def _text(f: Finding) -> str:
    fix = f.fix and f.status != OK
    return line(f"{f.status} {f.check}: {f.finding}") + (line(f"  fix: {f.fix}") if fix else "")


def run_checks(cwd: Path, env: Mapping[str, str], notify_url: str | None = None) -> list[Finding]:
    repo, repo_finding = repository(cwd)
    reviewed = reviewer_clone(env, repo)
    secret, secret_finding = secret_check(env, repo, reviewed)
    found = [git_version(cwd), python_check(), repo_finding, secret_finding]
    found.append(secret_file(env, reviewed))
    if repo is not None:
        found += repository_checks(repo, env, secret, has_commit=repo_finding.status == OK)
        if repo_finding.status == OK:
            found += runner_checks(repo, env, reviewed)
    found.append(ssh_keygen(env))
    config = config_check(repo.root)[0] if repo is not None else None
    scrub = config.scrub_env if config is not None else ()
    found.append(sandbox_check(config, env))
    found += notify_checks(config, repo.root if repo is not None else None, env, notify_url)
    found += [agent_check(cli, cwd, env, scrub) for cli in SUPPORTED]
    return found
