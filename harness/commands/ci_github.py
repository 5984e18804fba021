"""`harness ci github`: the GitHub Actions workflow (one job, or `--matrix`: one per goal).

It follows the shared choices of the generated set-ups (harness/commands/ci.py): the
harness pinned (ci_install.py), the secret through a file, `harness run --push origin`.
What a workflow holds is kept small: every action at a full commit, no token in
`.git/config` (`persist-credentials: false`; the harness's own pushes get it through
GIT_ASKPASS), a read-only token except in the job that pushes, and the secret in the
`goal-harness` environment, where an owner can add required reviewers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TextIO

from harness.commands.ci import branch_prefix
from harness.commands.ci_install import install_command
from harness.commands.ci_matrix import github_matrix_workflow
from harness.commands.ci_steps import (
    ENVIRONMENT,
    INSTALL_BUBBLEWRAP,
    PUSH_ENV,
    SETUP_STEPS,
    WRITE_ASKPASS,
    WRITE_SECRET,
    fill,
)
from harness.errors import InvalidInput
from harness.record.visible import line
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo

WORKFLOW_PATH = ".github/workflows/harness.yml"
DEFAULT_GITHUB_CRON = "*/30 * * * *"
# One cron field for GitHub: numbers, names (MON, JAN), and * / , -.
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,-]+$")


def ci_github(
    cwd: Path,
    out: TextIO,
    force: bool,
    cron: str = DEFAULT_GITHUB_CRON,
    install: str | None = None,
    matrix: bool = False,
    direct_url: str | None = None,
) -> int:
    """Write .github/workflows/harness.yml; refuse to replace one unless `force`."""
    root = Repo.discover(cwd).root
    command = install_command(install, root, direct_url)
    _check_github_cron(cron)
    target = root / WORKFLOW_PATH
    if target.exists() and not force:
        raise InvalidInput(
            f"{WORKFLOW_PATH}: already exists (expected no file; pass --force to replace it)"
        )
    prefix = branch_prefix(root)
    if matrix:
        text = github_matrix_workflow(prefix, command, cron)
    else:
        text = github_workflow(prefix, cron, command)
    atomic_write(target, text.encode())
    out.write(line(f"wrote {WORKFLOW_PATH}"))
    out.write(
        line(
            "next: put the secret HARNESS_SECRET (a value from `harness secret new --print`) "
            f"in the environment {ENVIRONMENT} (Settings > Environments; add required "
            "reviewers there) or in the repository's secrets, then commit the workflow"
        )
    )
    return 0


def github_workflow(branch_prefix: str, cron: str, install_command: str) -> str:
    return fill(_WORKFLOW, branch_prefix, cron, install_command)


def _check_github_cron(cron: str) -> None:
    fields = cron.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise InvalidInput(
            f"--schedule: {cron!r} (expected a cron expression of 5 fields, UTC, "
            "e.g. '0 2 * * *' for 02:00 each day)"
        )


# Written as text, not dumped from a dict, so that the comments reach the reader. The run
# step treats 4 (another runner holds every goal) as success; every other non-zero exit
# fails the job. The summary step runs even after a failure, because that is when it is
# read.
_WORKFLOW = (
    """\
# goal-harness: advance the approved goals on a schedule (made by `harness ci github`).
# Needs the secret HARNESS_SECRET (a value from `harness secret new --print`) in the
# environment @ENVIRONMENT@ or in the repository's secrets.
# Guide: docs/guide/scheduling.md in goal-harness.
name: goal-harness

on:
  schedule:
    - cron: "@CRON@"  # UTC (`harness ci github --schedule`); GitHub may start runs late
  workflow_dispatch: {}

# One run at a time. A new run waits for the live one rather than cancelling it: a
# cancelled step is resumed, and possibly run again, by the next run.
concurrency:
  group: goal-harness
  cancel-in-progress: false

# No job token rights unless a job asks for them below.
permissions: {}

jobs:
  run:
    runs-on: ubuntu-latest
    # The secret's home: an owner can require reviewers, or allow the default branch only.
    environment: @ENVIRONMENT@
    permissions:
      contents: write  # the run commits to, and pushes, the goal branches @PREFIX@<id>
    # A bound on a stuck job; each step also has its own timeout in the goal file.
    timeout-minutes: 360
    steps:
"""
    + SETUP_STEPS
    + INSTALL_BUBBLEWRAP
    + WRITE_SECRET
    + WRITE_ASKPASS
    + """\
      - name: Run goals
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
"""
    + PUSH_ENV
    + """\
        run: |
          code=0
          harness run --push origin || code=$?
          if [ "$code" -ne 0 ] && [ "$code" -ne 4 ]; then
            echo "::error::harness run exited $code (1 internal error, 2 invalid input, 3 trust failure)"
            exit "$code"
          fi
      - name: Summary
        if: always()
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
        run: |
          {
            echo "## goal-harness status"
            echo
            echo '```text'
            harness status || echo "(harness status exited $?)"
            echo '```'
            for ref in $(git for-each-ref --format='%(refname:lstrip=2)' "@REFS@"); do
              echo
              harness replay "${ref#@PREFIX@}" --format md || echo "(no report for $ref)"
            done
          } >> "$GITHUB_STEP_SUMMARY"
      - name: Write the report site
        # index.html lists every goal and links each one's report (`harness report --all`).
        if: always()
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
        run: harness report --all --out "$RUNNER_TEMP/goal-harness-report" || echo "::warning::harness report exited $?"
      - name: Upload the report site
        if: always()
        uses: @UPLOAD_ARTIFACT@
        with:
          name: goal-harness-report
          path: ${{ runner.temp }}/goal-harness-report
          if-no-files-found: ignore
      - name: Remove the secret file
        if: always()
        shell: bash
        run: rm -f "$RUNNER_TEMP/goal-harness-secret" "$RUNNER_TEMP/goal-harness-askpass"
"""
)
