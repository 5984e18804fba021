"""`harness ci github --matrix`: one GitHub job per goal, on GitHub's own scheduler.

The first job lists the goals a run would move now (`runnable` in `harness status --json`,
read without the secret: a step, a decision pushed from a laptop, a recurring goal's due
run); the matrix job runs `harness run <id> --push origin` on its own
runner, one concurrency group per goal; the last job writes one summary and fails, with an
annotation per goal, when `harness status --check` says a goal needs a human.

The checkout keeps no credentials (`persist-credentials: false`). The job token reaches
only the harness's own git: through `HARNESS_PUSH_TOKEN` and a GIT_ASKPASS script that
prints it, while every step the harness starts has `HARNESS_PUSH_TOKEN` scrubbed from its
environment (loop/steps.py) and sees `.git` read-only under the sandbox (sandbox.md).
"""

from __future__ import annotations

from harness.commands.ci_steps import (
    INSTALL_BUBBLEWRAP,
    PUSH_ENV,
    SETUP_STEPS,
    WRITE_ASKPASS,
    WRITE_SECRET,
    fill,
)


def github_matrix_workflow(branch_prefix: str, install_command: str, cron: str) -> str:
    return fill(_MATRIX, branch_prefix, cron, install_command)


_MATRIX = (
    """\
# goal-harness: one job per goal (made by `harness ci github --matrix`).
# Needs the secret HARNESS_SECRET (a value from `harness secret new --print`) in the
# environment @ENVIRONMENT@ or in the repository's secrets.
# Guide: docs/guide/scheduling.md in goal-harness.
name: goal-harness

on:
  schedule:
    - cron: "@CRON@"  # UTC (`harness ci github --schedule`); GitHub may start runs late
  workflow_dispatch: {}

# No job token rights unless a job asks for them below.
permissions: {}

jobs:
  goals:
    # Which goals have something to do now: not at rest, not waiting for a human.
    runs-on: ubuntu-latest
    permissions:
      contents: read
    timeout-minutes: 15
    outputs:
      ids: ${{ steps.list.outputs.ids }}
    steps:
"""
    + SETUP_STEPS
    + """\
      - name: List goals
        id: list
        shell: bash
        run: |
          # `runnable`: a `harness run <id>` now would move the goal (a step, a pushed
          # decision to act on, a recurring goal's due run; docs/specs/cli.md).
          ids=$(harness status --json | python -c '
          import json, sys
          print(json.dumps([r["id"] for r in json.load(sys.stdin) if r["runnable"] is True]))
          ')
          echo "ids=$ids" >> "$GITHUB_OUTPUT"
          echo "goals to run: $ids"

  run:
    needs: goals
    if: needs.goals.outputs.ids != '[]'
    runs-on: ubuntu-latest
    # The secret's home: an owner can require reviewers, or allow the default branch only.
    environment: @ENVIRONMENT@
    permissions:
      contents: write  # the one job that pushes: the goal branches @PREFIX@<id>
    timeout-minutes: 360  # a bound on a stuck job; each step has its own timeout too
    strategy:
      fail-fast: false
      max-parallel: 20
      matrix:
        goal: ${{ fromJSON(needs.goals.outputs.ids) }}
    # One live job per goal: a new one waits rather than cancelling a live step.
    concurrency:
      group: goal-harness-${{ matrix.goal }}
      cancel-in-progress: false
    steps:
"""
    + SETUP_STEPS
    + INSTALL_BUBBLEWRAP
    + WRITE_SECRET
    + WRITE_ASKPASS
    + """\
      - name: Run the goal
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
          GOAL: ${{ matrix.goal }}
"""
    + PUSH_ENV
    + """\
        run: |
          code=0
          harness run "$GOAL" --push origin || code=$?
          if [ "$code" -ne 0 ] && [ "$code" -ne 4 ]; then
            echo "::error title=goal $GOAL::harness run exited $code (1 internal error, 2 invalid input, 3 trust failure)"
            exit "$code"
          fi
      - name: Remove the secret file
        if: always()
        shell: bash
        run: rm -f "$RUNNER_TEMP/goal-harness-secret" "$RUNNER_TEMP/goal-harness-askpass"

  summary:
    # One summary for the whole fan-out; fails when a goal needs a human.
    needs: [goals, run]
    if: always()
    runs-on: ubuntu-latest
    environment: @ENVIRONMENT@
    permissions:
      contents: read
    timeout-minutes: 15
    steps:
"""
    + SETUP_STEPS
    + WRITE_SECRET
    + """\
      - name: Summary
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
          } >> "$GITHUB_STEP_SUMMARY"
          harness status --json | python -c '
          import json, sys
          def data(value):  # a workflow command: GitHub decodes %25, %0D and %0A in its message
              return str(value).replace("%", "%25").replace("\\r", "%0D").replace("\\n", "%0A")
          def prop(value):  # and in a property, which a comma or a colon would end
              return data(value).replace(":", "%3A").replace(",", "%2C")
          for r in json.load(sys.stdin):
              if r["status"] in ("parked_at_eyes", "needs_attention"):
                  shown = (prop(r["id"]), data(r["status"]), data(r["gate"]))
                  print("::warning title=goal %s::%s at gate %s" % shown)
          '
          code=0
          harness status --check >/dev/null || code=$?
          case "$code" in
            0) ;;
            10) echo "::error::a goal is parked at eyes: a decision is due"; exit 1 ;;
            11) echo "::error::a goal needs attention"; exit 1 ;;
            *) echo "::error::harness status --check exited $code"; exit 1 ;;
          esac
      - name: Remove the secret file
        if: always()
        shell: bash
        run: rm -f "$RUNNER_TEMP/goal-harness-secret"
"""
)
