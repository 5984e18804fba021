"""The parts both GitHub workflows share (`ci_github.py`, `ci_matrix.py`): the pinned
actions, the steps every job starts with, the secret and push-helper steps, and `fill`,
which puts a repository's values into a template. Why each is as it is: the docstring of
ci_github.py and docs/specs/cli.md, "The GitHub workflows".
"""

from __future__ import annotations

ENVIRONMENT = "goal-harness"
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


def fill(template: str, branch_prefix: str, cron: str, install_command: str) -> str:
    """`template` with the branch refs, the schedule, the install line and the actions."""
    text = template.replace("@REFS@", f"refs/heads/{branch_prefix}")
    text = text.replace("@PREFIX@", branch_prefix).replace("@CRON@", cron)
    text = text.replace("@INSTALL@", install_command).replace("@ENVIRONMENT@", ENVIRONMENT)
    for name, pinned in ACTIONS.items():
        text = text.replace(name, pinned)
    return text


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
