"""`harness ci github`: the GitHub Actions workflow (one job, or `--matrix`: one per goal).

It follows the shared choices of the generated set-ups (harness/commands/ci.py): the
harness pinned, the secret through a file, `harness run --push origin`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TextIO

from harness.commands.ci import branch_prefix
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
) -> int:
    """Write .github/workflows/harness.yml; refuse to replace one unless `force`."""
    spec = install_spec(install)
    root = Repo.discover(cwd).root
    _check_github_cron(cron)
    target = root / WORKFLOW_PATH
    if target.exists() and not force:
        raise InvalidInput(
            f"{WORKFLOW_PATH}: already exists (expected no file; pass --force to replace it)"
        )
    prefix = branch_prefix(root)
    if matrix:
        from harness.commands.ci_matrix import github_matrix_workflow

        text = github_matrix_workflow(prefix, spec, cron)
    else:
        text = github_workflow(prefix, cron, spec)
    atomic_write(target, text.encode())
    out.write(line(f"wrote {WORKFLOW_PATH}"))
    out.write(
        "next: add the repository secret HARNESS_SECRET (a value from "
        "`harness secret new --print`), then commit the workflow\n"
    )
    return 0


def github_workflow(
    branch_prefix: str, cron: str = DEFAULT_GITHUB_CRON, install: str | None = None
) -> str:
    refs = f"refs/heads/{branch_prefix}"
    spec = install_spec(install)
    text = _WORKFLOW.replace("@REFS@", refs).replace("@PREFIX@", branch_prefix)
    return text.replace("@CRON@", cron).replace("@INSTALL@", spec)


def _check_github_cron(cron: str) -> None:
    fields = cron.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise InvalidInput(
            f"--schedule: {cron!r} (expected a cron expression of 5 fields, UTC, "
            "e.g. '0 2 * * *' for 02:00 each day)"
        )


# A requirement (`goal-harness==0.1.0`) or a pip URL (`git+https://…@<tag>`): one shell word
# inside double quotes in a YAML plain scalar, so nothing that could end either.
_INSTALL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],=<>!~+:/@#%]*")


def install_spec(install: str | None) -> str:
    """What the workflow installs: `install`, else this harness's own version, pinned."""
    from harness import __version__

    spec = f"goal-harness=={__version__}" if install is None else install
    if not _INSTALL_RE.fullmatch(spec):
        raise InvalidInput(
            f"--install: {spec!r} is not an install spec (expected a pinned requirement such "
            "as goal-harness==0.1.0, or a pip URL such as git+https://…/goal-harness@v0.1.0, "
            "without blanks, quotes or $)"
        )
    return spec


# Written as text, not dumped from a dict, so that the comments reach the reader. The run
# step treats 4 (another runner holds every goal) as success; every other non-zero exit
# fails the job. The summary step runs even after a failure, because that is when it is
# read.
_WORKFLOW = """\
# goal-harness: advance the approved goals on a schedule (made by `harness ci github`).
# Needs the repository secret HARNESS_SECRET (a value from `harness secret new --print`).
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

permissions:
  contents: write  # the run commits to, and pushes, the goal branches @PREFIX@<id>

jobs:
  run:
    runs-on: ubuntu-latest
    # A bound on a stuck job; each step also has its own timeout in the goal file.
    timeout-minutes: 360
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # full history: goal branches share it with the control branch
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install goal-harness
        # Pinned (`harness ci github --install SPEC`): this job holds contents: write and
        # the secret, so it installs exactly this, never whatever a name resolves to today.
        run: python -m pip install "@INSTALL@"
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
      - name: Fetch goal branches
        # Every goal branch becomes a local branch, so the summary shows every goal. One
        # that exists here already is left alone: `harness run --push` brings it to the
        # remote's state fast-forward-only.
        shell: bash
        run: |
          git fetch --no-tags --prune origin "+@REFS@*:refs/remotes/origin/@PREFIX@*"
          for ref in $(git for-each-ref --format='%(refname:lstrip=3)' "refs/remotes/origin/@PREFIX@"); do
            git show-ref -q --verify "refs/heads/$ref" || git branch -q --no-track "$ref" "origin/$ref"
          done
      # The secret goes into a file only this job's user can read, by a step that ends at
      # once; the steps that stay alive as the harness's parent never hold it.
      - name: Write the secret to a file
        shell: bash
        env:
          HARNESS_SECRET: ${{ secrets.HARNESS_SECRET }}
        run: |
          umask 077
          printf '%s\\n' "$HARNESS_SECRET" > "$RUNNER_TEMP/goal-harness-secret"
      - name: Run goals
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
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
        uses: actions/upload-artifact@v4
        with:
          name: goal-harness-report
          path: ${{ runner.temp }}/goal-harness-report
          if-no-files-found: ignore
      - name: Remove the secret file
        if: always()
        shell: bash
        run: rm -f "$RUNNER_TEMP/goal-harness-secret"
"""
