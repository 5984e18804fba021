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
from harness.errors import InvalidInput
from harness.record.visible import line
from harness.store.fsutil import atomic_write
from harness.store.gitrepo import Repo

WORKFLOW_PATH = ".github/workflows/harness.yml"
DEFAULT_GITHUB_CRON = "*/30 * * * *"
ENVIRONMENT = "goal-harness"
# One cron field for GitHub: numbers, names (MON, JAN), and * / , -.
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,-]+$")
# Every action the workflows use, at the commit its release tag named when it was chosen (a
# tag can be moved to other code; a commit cannot). The tag follows as a comment, which is
# what Dependabot and Renovate read to propose the next one. How each was checked:
# docs/specs/cli.md, "The GitHub workflows".
ACTIONS = {
    "@CHECKOUT@": "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1  # v7.0.1",
    "@SETUP_PYTHON@": "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97  # v7.0.0",
    "@UPLOAD_ARTIFACT@": (
        "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f  # v7.0.0"
    ),
}


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
        from harness.commands.ci_matrix import github_matrix_workflow

        text = github_matrix_workflow(prefix, command, cron)
    else:
        text = github_workflow(prefix, cron, command)
    atomic_write(target, text.encode())
    out.write(line(f"wrote {WORKFLOW_PATH}"))
    out.write(
        f"next: put the secret HARNESS_SECRET (a value from `harness secret new --print`) in "
        f"the environment {ENVIRONMENT} (Settings > Environments; add required reviewers "
        "there) or in the repository's secrets, then commit the workflow\n"
    )
    return 0


def github_workflow(branch_prefix: str, cron: str, install_command: str) -> str:
    return fill(_WORKFLOW, branch_prefix, cron, install_command)


def fill(template: str, branch_prefix: str, cron: str, install_command: str) -> str:
    """`template` with the branch refs, the schedule, the install line and the actions."""
    text = template.replace("@REFS@", f"refs/heads/{branch_prefix}")
    text = text.replace("@PREFIX@", branch_prefix).replace("@CRON@", cron)
    text = text.replace("@INSTALL@", install_command).replace("@ENVIRONMENT@", ENVIRONMENT)
    for name, pinned in ACTIONS.items():
        text = text.replace(name, pinned)
    return text


def _check_github_cron(cron: str) -> None:
    fields = cron.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise InvalidInput(
            f"--schedule: {cron!r} (expected a cron expression of 5 fields, UTC, "
            "e.g. '0 2 * * *' for 02:00 each day)"
        )


# The steps every job that runs the harness starts with: the checkout (no credentials kept),
# Python, the pinned harness, the goal branches as local ones. The token reaches the fetch
# as a header given to that one git command.
SETUP_STEPS = """\
      - uses: @CHECKOUT@
        with:
          fetch-depth: 0  # full history: goal branches share it with the control branch
          persist-credentials: false  # no token in .git/config, where a step could read it
      - uses: @SETUP_PYTHON@
        with:
          python-version: "3.11"
      - name: Install goal-harness
        # Pinned to a commit or to hashes (`harness ci github --install SPEC`): the jobs that
        # run it hold the secret or a write token, so never whatever a name resolves to today.
        run: @INSTALL@
      - name: Fetch goal branches
        # Every goal branch becomes a local branch, so the summary shows every goal. One
        # that exists here already is left alone: `harness run --push` brings it to the
        # remote's state fast-forward-only.
        shell: bash
        env:
          GH_TOKEN: ${{ github.token }}
        run: |
          auth="AUTHORIZATION: basic $(printf 'x-access-token:%s' "$GH_TOKEN" | base64 -w0)"
          git -c "http.https://github.com/.extraheader=$auth" fetch --no-tags --prune origin \\
            "+@REFS@*:refs/remotes/origin/@PREFIX@*"
          for ref in $(git for-each-ref --format='%(refname:lstrip=3)' "refs/remotes/origin/@PREFIX@"); do
            git show-ref -q --verify "refs/heads/$ref" || git branch -q --no-track "$ref" "origin/$ref"
          done
"""

INSTALL_BUBBLEWRAP = """\
      - name: Install bubblewrap
        # Every step runs contained under bwrap (`sandbox: auto`; docs/specs/sandbox.md).
        # Ubuntu 24.04 lets AppArmor forbid the user namespaces bwrap makes; lift that on
        # this throw-away runner, or `sandbox: required` refuses to run.
        shell: bash
        run: |
          command -v bwrap >/dev/null || { sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap; }
          if [ "$(sysctl -n kernel.apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
            sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
          fi
"""

# The secret goes into a file only this job's user can read, by a step that ends at once;
# the steps that stay alive as the harness's parent never hold it.
WRITE_SECRET = """\
      - name: Write the secret to a file
        shell: bash
        env:
          HARNESS_SECRET: ${{ secrets.HARNESS_SECRET }}
        run: |
          umask 077
          printf '%s\\n' "$HARNESS_SECRET" > "$RUNNER_TEMP/goal-harness-secret"
"""

# The push helper holds no token: it prints HARNESS_PUSH_TOKEN, which only the run step's
# environment has and the harness scrubs from every step it starts (loop/steps.py).
WRITE_ASKPASS = """\
          printf '#!/bin/sh\\ncase "$1" in Username*) echo x-access-token ;; *) echo "$HARNESS_PUSH_TOKEN" ;; esac\\n' \\
            > "$RUNNER_TEMP/goal-harness-askpass"
          chmod 700 "$RUNNER_TEMP/goal-harness-askpass"
"""

PUSH_ENV = """\
          # Only the harness's own git asks for it; every step it starts has it scrubbed.
          HARNESS_PUSH_TOKEN: ${{ github.token }}
          GIT_ASKPASS: ${{ runner.temp }}/goal-harness-askpass
"""

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
