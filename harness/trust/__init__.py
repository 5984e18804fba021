"""Trust: who may decide, what they signed, and which changes need a human.

Owns the repository secret and its derived keys (`secret`), SSH signatures and owners'
approvals (`approval`), which signed decision crosses which gate (`decisions`), and the
destructive-change rules (the `destructive` package). Each check here fails closed.

May import: `harness.errors`, `harness.store`, `harness.model`, `harness.record`.
"""
