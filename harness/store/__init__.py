"""Git and files: every git call, the goal worktrees, remotes, locks and atomic writes.

Owns how bytes reach the disk and the repository (`gitrepo` runs git with a clean
environment; `objects` reads many objects through one `cat-file --batch`; `fsutil` writes atomically and appends whole lines; `lock` holds a goal's
flock and probes it; `remote` pushes and fetches goal branches, a push through GitPython
(`gitpush`); `worktree` opens a goal's worktree and lists the registered ones; `headlog` reads a worktree's HEAD as files where git will not; `recorded` keeps which goals this clone ran). It knows
nothing of goals, events or signatures.

May import: `harness.errors`, `harness.failpoints`, and the standard library and GitPython.
"""
