"""Sandbox metrics for scripts/bench (docs/specs/performance.md, sandbox.md). Every side
is one step through `sandbox.contain` and `steps.run_step`, as the controller runs it,
timed from entering `contain` (the fresh home, the throw-away copy) to leaving it (the
copy removed); the contained and bare sides alternate.

- sandbox_step: a 0.5 s step (`sleep 0.5`) under bwrap, as a build (the worktree bound
  writable) and as a judge (a throw-away copy of the 250-file worktree); the worse of the
  two against the same step bare.
- sandbox_fixed (issue 29): a `true` build contained against the same build bare: what
  containing a step costs by itself, which sandbox_step's 0.5 s sleep hides.
- sandbox_layer (issue 29): a `true` judge on a 2,000-file worktree contained (its
  throw-away copy made and removed around it) against the same judge bare.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench import Best, Managed, git, report, say, settle

if TYPE_CHECKING:
    from harness.loop.contain.place import Place
    from harness.loop.contain.sandbox import Sandbox

SANDBOX_GOAL = "sandbox-step"
LAYER_GOAL = "sandbox-layer"
LAYER_FILES = 2_000  # the files of sandbox_layer's worktree, the project's included
FIXED_PER_REP = 10  # `true` takes milliseconds: sandbox_fixed makes 10 pairs a repetition
LAYER_PER_REP = 5


def _place(repo: Managed, goal_id: str) -> Place:
    """The goal's worktree, made from main, and where its steps run."""
    from harness.loop.contain.place import Place

    wt = repo.root / ".harness" / "worktrees" / goal_id
    git(repo.root, "worktree", "add", "-q", "-b", f"harness/{goal_id}", str(wt))
    return Place(goal_id, wt, repo.root, repo.root / ".git", wt.parent, dict(os.environ))


def _sandboxes() -> tuple[Sandbox, Sandbox]:
    from harness.loop.contain.sandbox import Sandbox, resolve

    return resolve("required", os.environ), Sandbox("off", "off", reason="bench")


def timed_step(sandbox: Sandbox, place: Place, argv: list[str], *, writable: bool) -> float:
    """One step, contained as `sandbox` says; its seconds. A failed step, or a contained
    read-only step without its copy, stops the bench."""
    from harness.loop.contain.sandbox import contain
    from harness.loop.steps import run_step

    started = time.perf_counter()
    with contain(sandbox, place, argv, dict(os.environ), writable=writable) as box:
        result = run_step(
            box.argv, place.worktree, box.env, b"", 30.0, bwrap=box.bwrap, prepare=box.prepare
        )
        copied = box.layer is not None
    seconds = time.perf_counter() - started
    if result.exit_code != 0:
        raise SystemExit(f"bench: {' '.join(argv)} failed: {result.output_tail}")
    if copied != (sandbox.on and not writable):
        raise SystemExit(f"bench: {' '.join(argv)} ran {'with' if copied else 'without'} a copy")
    return seconds


def bench_sandbox(repo: Managed, reps: int) -> None:
    """sandbox_step: a 0.5 s build and judge contained, the worse against bare."""
    settle()
    contained, bare = _sandboxes()
    place = _place(repo, SANDBOX_GOAL)
    argv = ["sleep", "0.5"]
    best = Best.of("build", "judge", "bare")
    for _ in range(reps):
        best.add("build", timed_step(contained, place, argv, writable=True))
        best.add("judge", timed_step(contained, place, argv, writable=False))
        best.add("bare", timed_step(bare, place, argv, writable=True))
    report(
        "sandbox_step",
        max(best["build"], best["judge"]),
        best["bare"],
        f"build {best['build'] * 1000:.0f} ms, judge (copy) {best['judge'] * 1000:.0f} ms, "
        f"bare {best['bare'] * 1000:.0f} ms (best of {reps})",
        "ms",
        {"build_ms": best["build"] * 1000, "judge_ms": best["judge"] * 1000},
    )


def bench_fixed(repo: Managed, reps: int) -> None:
    """sandbox_fixed: a `true` build contained against bare, on sandbox_step's worktree."""
    settle()
    contained, bare = _sandboxes()
    place = _place(repo, "sandbox-fixed")
    best = Best.of("contained", "bare")
    for _ in range(reps * FIXED_PER_REP):
        best.add("contained", timed_step(contained, place, ["true"], writable=True))
        best.add("bare", timed_step(bare, place, ["true"], writable=True))
    report(
        "sandbox_fixed",
        best["contained"],
        best["bare"],
        f"true as a build: contained {best['contained'] * 1000:.2f} ms, bare "
        f"{best['bare'] * 1000:.2f} ms (best of {reps * FIXED_PER_REP})",
        "ms",
    )


def layer_repo(repo: Managed) -> int:
    """Files added to main until its tree holds LAYER_FILES; how many files it holds."""
    have = len(git(repo.root, "ls-files").splitlines())
    for n in range(LAYER_FILES - have):
        path = repo.root / "extra" / f"d{n // 100:02d}" / f"f{n:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"extra file {n}\n" * (1 + n % 8))
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "files for sandbox_layer")
    return len(git(repo.root, "ls-files").splitlines())


def bench_layer(repo: Managed, reps: int) -> None:
    """sandbox_layer: a `true` judge on a 2,000-file worktree, contained (its copy made and
    removed) against bare."""
    files = layer_repo(repo)
    settle()
    contained, bare = _sandboxes()
    place = _place(repo, LAYER_GOAL)
    best = Best.of("contained", "bare")
    for _ in range(reps * LAYER_PER_REP):
        best.add("contained", timed_step(contained, place, ["true"], writable=False))
        best.add("bare", timed_step(bare, place, ["true"], writable=False))
    report(
        "sandbox_layer",
        best["contained"],
        best["bare"],
        f"true as a judge on {files:,} files: contained (copy made and removed) "
        f"{best['contained'] * 1000:.1f} ms, bare {best['bare'] * 1000:.1f} ms "
        f"(best of {reps * LAYER_PER_REP})",
        "ms",
    )
    _layer_parts(place.worktree, files)


def _layer_parts(worktree: Path, files: int) -> None:
    """Where a layer's time goes: the copy and the removal, in-process (stderr only)."""
    from harness.loop.contain.layer import MEMORY, make_layer

    copy = remove = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        layer = make_layer(worktree)
        made = time.perf_counter()
        layer.remove()
        copy, remove = min(copy, made - started), min(remove, time.perf_counter() - made)
    where = "memory" if layer.folder.is_relative_to(MEMORY) else "disk"
    say(
        f"sandbox_layer: a layer of {files:,} files in {where}: {copy * 1000:.1f} ms to "
        f"copy, {remove * 1000:.1f} ms to remove (in-process, best of 5)"
    )
