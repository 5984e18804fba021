"""Doctor's checks of the machine: git, Python, ssh-keygen, the sandbox, the agent CLIs."""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.errors import InvalidInput, TrustFailure
from harness.loop.agents.support import AgentCli, probe
from harness.model.config import Config
from harness.store.gitrepo import run_git

# `git rev-parse --path-format` (Repo.discover) and the `prunable` mark in
# `git worktree list --porcelain` both arrived in git 2.31.
MIN_GIT = (2, 31)


def sandbox_check(config: Config | None, env: Mapping[str, str]) -> Finding:
    from harness.loop.contain.sandbox import FIX, resolve

    try:
        sandbox = resolve(config.sandbox if config else None, env)
    except TrustFailure as exc:
        return fail("sandbox", str(exc), FIX, trust=True)
    except InvalidInput as exc:
        return fail("sandbox", str(exc), "set HARNESS_SANDBOX to auto, required or off")
    if sandbox.on:
        return Finding("sandbox", OK, f"{sandbox.describe()}: {sandbox.bwrap} works")
    fix = "remove `sandbox: off` from .harness/config.yaml" if sandbox.mode == "off" else FIX
    return Finding("sandbox", WARN, sandbox.describe(), fix)


def parse_git_version(text: str) -> tuple[int, int] | None:
    match = re.search(r"git version (\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


def git_version(cwd: Path) -> Finding:
    fix = f"install git {MIN_GIT[0]}.{MIN_GIT[1]} or newer"
    try:
        text = run_git(["--version"], cwd, check=False).stdout.decode("utf-8", "replace").strip()
    except OSError:
        return fail("git", "git is not on PATH", fix)
    version = parse_git_version(text)
    if version is None:
        return fail("git", f"cannot read a version from {text!r}", fix)
    shown = text.removeprefix("git version ")
    if version < MIN_GIT:
        return fail("git", f"{shown} is older than {MIN_GIT[0]}.{MIN_GIT[1]}", fix)
    return Finding("git", OK, shown)


def python_check() -> Finding:
    shown = ".".join(map(str, sys.version_info[:3]))
    # Goal records read from a branch are unpacked with tarfile's extraction filters,
    # added in 3.11.4; before that, replay and verify of a branch would fail.
    if not hasattr(tarfile, "data_filter"):
        return fail(
            "python", f"{shown} has no tarfile extraction filters", "use Python 3.11.4 or newer"
        )
    return Finding("python", OK, shown)


def ssh_keygen(env: Mapping[str, str]) -> Finding:
    path = shutil.which("ssh-keygen", path=env.get("PATH"))
    if path:
        return Finding("ssh-keygen", OK, path)
    return Finding(
        "ssh-keygen",
        WARN,
        "not found on PATH",
        "install the OpenSSH client (e.g. `apt-get install openssh-client`) to make keys and "
        "check approvals with `ssh-keygen -Y verify`; `harness approve` does not need it",
    )


def agent_check(
    cli: AgentCli, cwd: Path, env: Mapping[str, str], scrub: tuple[str, ...]
) -> Finding:
    """Each agent CLI on PATH, its version, and whether the suite tested that version."""
    check = f"agent {cli.name}"
    found = probe(cli, env, scrub, cwd)
    guide = f"docs/guide/agents/{cli.name}.md"
    if found.path is None:
        return Finding(check, OK, f"not on PATH (only goals that run {cli.name} need it)")
    if found.version is None:
        fix = f"check that {found.path} runs; install the tested version: {cli.install}"
        return Finding(check, WARN, f"{found.path}: {found.problem}", fix)
    if not cli.in_tested_range(found.version):
        fix = f"install the tested version: {cli.install} (see {guide})"
        finding = f"{found.version} at {found.path} is outside the tested range {cli.tested}"
        return Finding(check, WARN, finding, fix)
    return Finding(check, OK, f"{found.version} at {found.path} (tested: {cli.tested})")
