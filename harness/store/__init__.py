"""Git and files: every git call, the goal worktrees, remotes, locks and atomic writes.

Owns how bytes reach the disk and the repository (`gitrepo` runs git with a clean
environment; `fsutil` writes atomically and appends whole lines; `lock` holds a goal's
flock; `remote` pushes and fetches goal branches; `worktree` opens a goal's worktree).
It knows nothing of goals, events or signatures.

May import: `harness.errors`, `harness.failpoints`, and the standard library and GitPython.
"""
