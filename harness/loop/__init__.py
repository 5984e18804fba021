"""The loop: reading the control ref, then advancing a goal one recorded step at a time.

Owns the human-owned files as read from the control ref (`control`), moving one goal on
(`advance`: verify, cross a gate a decision names, then the controller), the step
machine itself (`controller`), a step's command run in its place (`execute`), how a
step's end is recorded (`finish`, a build's in `buildfinish`), a signed decision's use
(`crossing`), the check that branch and worktree are the harness's own
(`binding`), containing each step under bubblewrap (`contain/`: `sandbox`, the host
sockets it hides in `sockets`, a read-only step's throw-away `layer`), appending and
committing a goal's events (`recorder`), what a run hands the loop (`context`, `clock`),
the step's prompt (`prompt`), budget arithmetic (`spend`), what a step must not change
(`guards`), the terminal's live line (`progress`), running a step's command (`steps`),
the files of a change that hold a secret (`quarantine`), a shipped goal's attestation
bundle (`attest`), reading what an agent reports
(`agents`), the agent CLIs it is tested with
(`agents.support`), naming the failing test (`judge`) and the team's
lessons (`lessons`).

May import: every part below the command line (`harness.errors`, `harness.store`,
`harness.model`, `harness.record`, `harness.trust`). Never click.
"""
