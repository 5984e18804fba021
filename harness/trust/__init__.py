"""Trust: who may decide, what they signed, and which changes need a human.

Owns the repository secret and its derived keys (`secret`), the SSH wire format and public
keys (`sshwire`), the owners file (`owners`), what an owner signs (`statement`), SSHSIG
signatures (`sshsig`), approval files (`approvals`), the problems their readers report
(`problem`), which signed decision crosses which gate (`decisions`), the runners' keys and
signed checkpoints (`runnerkey`, `runners`, `checkpoint`), in-toto attestations of a shipped
goal (`intoto`, `attestfacts`, `attestation`, `shipenvelope`), and the destructive-change
rules (the `destructive` package). Each check here fails closed.

May import: `harness.errors`, `harness.store`, `harness.model`, `harness.record`.
"""
