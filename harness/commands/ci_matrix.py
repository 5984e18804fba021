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


def github_matrix_workflow(branch_prefix: str, install: str, cron: str) -> str:
    refs = f"refs/heads/{branch_prefix}"
    text = _MATRIX.replace("@REFS@", refs).replace("@PREFIX@", branch_prefix)
    return text.replace("@INSTALL@", install).replace("@CRON@", cron)


# The steps every job shares: Python, the pinned harness, the goal branches as local ones.
_SETUP = """\
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # full history: goal branches share it with the control branch
          persist-credentials: false  # no token in .git/config, where a step could read it
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install goal-harness
        # Pinned (`harness ci github --install SPEC`): never whatever a name resolves to.
        run: python -m pip install "@INSTALL@"
      - name: Fetch goal branches
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

_MATRIX = (
    """\
# goal-harness: one job per goal (made by `harness ci github --matrix`).
# Needs the repository secret HARNESS_SECRET (a value from `harness secret new --print`).
# Guide: docs/guide/scheduling.md in goal-harness.
name: goal-harness

on:
  schedule:
    - cron: "@CRON@"  # UTC (`harness ci github --schedule`); GitHub may start runs late
  workflow_dispatch: {}

permissions:
  contents: write  # the runs push the goal branches @PREFIX@<id>

jobs:
  goals:
    # Which goals have something to do now: not at rest, not waiting for a human.
    runs-on: ubuntu-latest
    timeout-minutes: 15
    outputs:
      ids: ${{ steps.list.outputs.ids }}
    steps:
"""
    + _SETUP
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
    + _SETUP
    + """\
      - name: Install bubblewrap
        # Every step runs contained under bwrap (`sandbox: auto`; docs/specs/sandbox.md).
        shell: bash
        run: |
          command -v bwrap >/dev/null || { sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap; }
          if [ "$(sysctl -n kernel.apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
            sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0
          fi
      - name: Write the secret to a file
        shell: bash
        env:
          HARNESS_SECRET: ${{ secrets.HARNESS_SECRET }}
        run: |
          umask 077
          printf '%s\\n' "$HARNESS_SECRET" > "$RUNNER_TEMP/goal-harness-secret"
          printf '#!/bin/sh\\ncase "$1" in Username*) echo x-access-token ;; *) echo "$HARNESS_PUSH_TOKEN" ;; esac\\n' \\
            > "$RUNNER_TEMP/goal-harness-askpass"
          chmod 700 "$RUNNER_TEMP/goal-harness-askpass"
      - name: Run the goal
        shell: bash
        env:
          HARNESS_SECRET_FILE: ${{ runner.temp }}/goal-harness-secret
          # Only the harness's git asks for it; every step it starts has it scrubbed.
          HARNESS_PUSH_TOKEN: ${{ github.token }}
          GIT_ASKPASS: ${{ runner.temp }}/goal-harness-askpass
          GOAL: ${{ matrix.goal }}
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
    timeout-minutes: 15
    steps:
"""
    + _SETUP
    + """\
      - name: Write the secret to a file
        shell: bash
        env:
          HARNESS_SECRET: ${{ secrets.HARNESS_SECRET }}
        run: |
          umask 077
          printf '%s\\n' "$HARNESS_SECRET" > "$RUNNER_TEMP/goal-harness-secret"
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
