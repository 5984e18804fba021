"""Containing a step: the bubblewrap command line and what it hides (`sandbox`), the host
sockets it hides by name (`sockets`), and a read-only step's throw-away layer over its
worktree, an overlay or a copy (`layer`). docs/specs/sandbox.md says what a step sees.

May import what `harness.loop` may (never the step machine above it)."""
