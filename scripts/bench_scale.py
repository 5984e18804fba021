"""Scale metrics for scripts/bench (issue 19): a 100,000-file repository, 10,000 goals,
and `--jobs` scaling. Each ratio is measured in the same run as its floor, both sides the
best of `--reps` repetitions taken alternately (docs/specs/performance.md, "Scale").

- bigrepo_start: `harness run` of a new goal, killed right after its first commit
  (`HARNESS_FAILPOINT=after_commit`: worktree and `goal.started` committed), against
  `git worktree add` of the same repository with the parallel checkout the harness uses
  (`gitrepo.WHOLE_CHECKOUT`, issue 29).
- bigrepo_step: `harness run --max-steps 2` of that started goal (a build appending a line
  to one file, a judge `true`), its wall time less the two step commands' own durations
  (from the ledger), per step, against `git add -A && git commit` of the same change in a
  worktree of the same repository.
- bigrepo_start_contained, bigrepo_step_contained (issue 29): the same with the steps
  contained as users run them (`sandbox: auto`, bwrap present): the judge works on a
  throw-away copy of the whole worktree. Same floors, same targets.
- status_10000: `harness status --json` over 10,000 goal branches against `for-each-ref`
  plus `cat-file --batch` of their cells.
- jobs_scaling: 40 goals whose build and judge each sleep 0.5 s, the wall time of
  `harness run --jobs 4` over that of `--jobs 1`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import bench
from bench import Best, git, goal_yaml, harness_cmd, harness_env, managed_repo, report, say

BIG_FILES = 100_000
BIG_DIRS = 1_000
BIG_FILE = "big/d000/f000000.txt"  # the one file each build (and the floor) changes
JOBS_GOALS = 40
JOBS_SLEEP = "sleep 0.5"


def _bare_env() -> dict[str, str]:
    """The harness's environment for the bare metrics (and jobs_scaling): steps uncontained,
    so they measure the harness's git work alone; the `_contained` metrics add bwrap and
    the judge's throw-away copy, which grows with the tree."""
    return harness_env() | {"HARNESS_SANDBOX": "off"}


def big_repo(base: Path, keys: Path, goals: list[str], files: int) -> bench.Managed:
    """A managed repository whose main holds BIG_FILES small distinct files in BIG_DIRS
    folders besides the usual project, made with one `git fast-import` stream."""
    build = f'echo "step $HARNESS_ITERATION" >> {BIG_FILE}'
    texts = {gid: goal_yaml(gid, build, "true", "true") for gid in goals}
    repo = managed_repo(base / "bigrepo", keys, texts)
    started = time.perf_counter()
    message = b"a big tree"
    stream = bytearray(b"commit refs/heads/main\n")
    stream += b"committer Bench <bench@example.com> 1764403200 +0000\n"
    stream += b"data %d\n%s\nfrom %s\n" % (len(message), message, repo.main.encode())
    per = max(1, files // BIG_DIRS)
    for n in range(files):
        body = b"file %d of a big tree\nline two %x\n" % (n, n * 2654435761 % 2**32)
        path = b"big/d%03d/f%06d.txt" % (n // per, n)
        stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path, len(body), body)
    git(repo.root, "fast-import", "--quiet", input=bytes(stream))
    git(repo.root, "reset", "-q", "--hard")
    repo.main = git(repo.root, "rev-parse", "HEAD")
    say(
        f"generated bigrepo: {files:,} files in {min(files, BIG_DIRS):,} folders "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return repo


def _timed_run(argv: list[str], cwd: Path, env: dict[str, str], ok: set[int]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    seconds = time.perf_counter() - started
    if proc.returncode not in ok:
        raise SystemExit(
            f"bench: {' '.join(argv[-4:])} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}"
        )
    return seconds


def _events(wt: Path, goal_id: str) -> list[dict[str, object]]:
    folder = wt / "ledger" / goal_id / "events"
    events = []
    for segment in sorted(folder.iterdir()):
        for line in segment.read_bytes().splitlines():
            events.append(json.loads(line)["e"])
    return events


def _step_seconds(wt: Path, goal_id: str) -> tuple[int, float]:
    """How many steps finished and the time their commands took, from the ledger."""
    finished = [e for e in _events(wt, goal_id) if e["type"] == "step.finished"]
    total = 0.0
    for event in finished:
        data = event["data"]
        assert isinstance(data, dict)
        total += float(data["duration_s"])
    return len(finished), total


def _drop_worktree(root: Path, path: Path) -> None:
    branch = git(path, "symbolic-ref", "--short", "HEAD")
    git(root, "worktree", "remove", "--force", str(path))
    git(root, "branch", "-q", "-D", branch)


def git_trace(trace: Path) -> tuple[int, Counter[str], dict[str, float]]:
    """From a GIT_TRACE2_EVENT file: top-level git processes, per subcommand their count
    and their summed wall time."""
    count: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    names: dict[str, str] = {}
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        sid = event.get("sid", "")
        if "/" in sid:  # a child git started by git itself (e.g. maintenance)
            continue
        if event["event"] == "start":
            argv = [a for a in event["argv"][1:]]
            while argv and argv[0] == "-c":
                argv = argv[2:]
            names[sid] = " ".join(argv[:2]) if argv[:1] == ["worktree"] else argv[0]
            if argv[:2] == ["cat-file", "--batch"]:  # the object reader, open for the run
                names[sid] = "cat-file --batch (open)"
        elif event["event"] == "exit" and sid in names:
            count[names[sid]] += 1
            seconds[names[sid]] = seconds.get(names[sid], 0.0) + float(event["t_abs"])
    return sum(count.values()), count, seconds


def _where(label: str, trace: Path) -> None:
    total, count, seconds = git_trace(trace)
    seconds.pop("cat-file --batch (open)", None)  # its lifetime, not its work
    rows = sorted(count, key=lambda name: -seconds.get(name, 0.0))
    shown = ", ".join(
        f"{name} {count[name]}× {seconds.get(name, 0) * 1000:.0f} ms" for name in rows
    )
    say(f"{label}: {total} git processes, {sum(seconds.values()):.2f} s in git: {shown}")


def _floor(repo: bench.Managed, n: int) -> tuple[float, float, Path]:
    """The floors, in a worktree of the same repository: `git worktree add` with the
    parallel checkout the harness uses (WHOLE_CHECKOUT), then `git add -A && git commit`
    of the change a build makes. Their seconds and the worktree."""
    from harness.store.gitrepo import WHOLE_CHECKOUT

    floor_wt = repo.root.parent / f"floor-{n}"
    os.sync()  # each checkout starts with no other side's writes still being flushed
    started = time.perf_counter()
    add = [*WHOLE_CHECKOUT, "worktree", "add", "-q", "-b", f"floor-{n}", str(floor_wt), "main"]
    git(repo.root, *add)
    add_seconds = time.perf_counter() - started
    with (floor_wt / BIG_FILE).open("a") as handle:
        handle.write("step 1\n")
    started = time.perf_counter()
    subprocess.run(["git", "add", "-A"], cwd=floor_wt, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "floor"], cwd=floor_wt, check=True)
    return add_seconds, time.perf_counter() - started, floor_wt


def _harness_goal(
    repo: bench.Managed, gid: str, env: dict[str, str], trace: Path | None
) -> tuple[float, float, Path]:
    """Start `gid` (killed after its first commit), then its two steps: the start's
    seconds, a step's seconds less its command's, and the goal's worktree. The steps must
    have been contained as `env` asks (bwrap, or off)."""
    run = [*harness_cmd(), "run", gid]
    start_env = env | {"HARNESS_FAILPOINT": "after_commit"}
    step_env = dict(env)
    if trace is not None:
        start_env["GIT_TRACE2_EVENT"] = f"{trace}-start"
        step_env["GIT_TRACE2_EVENT"] = f"{trace}-steps"
    os.sync()
    start = _timed_run([*run, "--max-steps", "1"], repo.root, start_env, {-9, 137})
    wt = repo.root / ".harness" / "worktrees" / gid
    kinds = [e["type"] for e in _events(wt, gid)]
    if kinds != ["goal.started"] or git(wt, "status", "--porcelain"):
        raise SystemExit(f"bench: the start of {gid} left {kinds} and a changed worktree")
    wall = _timed_run([*run, "--max-steps", "2"], repo.root, step_env, {0})
    steps, commands = _step_seconds(wt, gid)
    if steps != 2 or git(wt, "diff", "--stat", "main", "HEAD", "--", BIG_FILE) == "":
        raise SystemExit(f"bench: {gid} did not run its build and judge ({steps} finished)")
    want = "off" if env.get("HARNESS_SANDBOX") == "off" else "bwrap"
    started = [e["data"] for e in _events(wt, gid) if e["type"] == "step.started"]
    boxes = {data.get("sandbox") for data in started if isinstance(data, dict)}
    if boxes != {want}:
        raise SystemExit(f"bench: {gid}'s steps ran contained by {boxes}, not {want}")
    return start, (wall - commands) / steps, wt


def bench_bigrepo(
    base: Path, keys: Path, reps: int, only: set[str], files: int = BIG_FILES
) -> None:
    """bigrepo_start and bigrepo_step, bare and contained (`sandbox: auto`, bwrap present:
    the judge works on a throw-away copy of the whole worktree), each repetition's sides
    in turn against the same floors."""
    sides = {"bare": _bare_env(), "contained": _contained_env()}
    wanted = [
        side
        for side, names in (
            ("bare", {"bigrepo_start", "bigrepo_step"}),
            ("contained", {"bigrepo_start_contained", "bigrepo_step_contained"}),
        )
        if only & names
    ]
    goals = {side: [f"{GOAL_PREFIX[side]}-{n}" for n in range(1, reps + 1)] for side in wanted}
    trace_goal = "big-trace" if "bare" in wanted else None
    everyone = [gid for ids in goals.values() for gid in ids] + ([trace_goal] if trace_goal else [])
    repo = big_repo(base, keys, everyone, files)
    best = Best.of(
        "worktree_add", "commit", *(f"{k}_{s}" for s in wanted for k in ("start", "step"))
    )
    # Worktrees are removed only after every side is measured: removing 100,000 files leaves
    # the disk busy (freeing and discarding blocks) well after `os.sync()`, and whichever
    # side came next paid for it (the harness's start took 30 s beside a 2.4 s floor).
    # Each repetition takes the sides in another order (floor, bare, contained; then bare,
    # contained, floor; ...): a checkout runs slower right after another one (the disk still
    # writes the last one's blocks back), so no side may always come first or last.
    made: list[Path] = []
    order = ["floor", *wanted]
    for n in range(reps):
        for side in order[n % len(order) :] + order[: n % len(order)]:
            if side == "floor":
                add_seconds, commit_seconds, wt = _floor(repo, n)
                best.add("worktree_add", add_seconds)
                best.add("commit", commit_seconds)
            else:
                start, step, wt = _harness_goal(repo, goals[side][n], sides[side], None)
                best.add(f"start_{side}", start)
                best.add(f"step_{side}", step)
            made.append(wt)
    if trace_goal is not None:  # untimed: where a start's and two steps' git time goes
        trace = base / f"trace-{trace_goal}"
        made.append(_harness_goal(repo, trace_goal, sides["bare"], trace)[2])
        _where("bigrepo_start git", Path(f"{trace}-start"))
        _where("bigrepo_step git (two steps)", Path(f"{trace}-steps"))
    if "contained" in wanted:
        _layer_cost(made[-1], files)
    for path in made:
        _drop_worktree(repo.root, path)
    _report_bigrepo(best, only, files, reps)


GOAL_PREFIX = {"bare": "big", "contained": "bigc"}


def _contained_env() -> dict[str, str]:
    """The harness's environment as users run it: `sandbox: auto` (the config names none,
    HARNESS_SANDBOX unset), so with bwrap present every step is contained."""
    env = harness_env()
    env.pop("HARNESS_SANDBOX", None)
    return env


def _layer_cost(worktree: Path, files: int) -> None:
    """What a read-only step's throw-away copy of this worktree costs, in-process (stderr)."""
    from harness.loop.contain.layer import MEMORY, make_layer

    started = time.perf_counter()
    layer = make_layer(worktree)
    made = time.perf_counter()
    layer.remove()
    where = "memory" if layer.folder.is_relative_to(MEMORY) else "disk"
    say(
        f"bigrepo contained: a read-only step's layer of {files:,} files in {where}: "
        f"{made - started:.2f} s to copy, {time.perf_counter() - made:.2f} s to remove"
    )


def _report_bigrepo(best: Best, only: set[str], files: int, reps: int) -> None:
    per = f"({files:,} files, best of {reps})"
    for side, suffix in (("bare", ""), ("contained", "_contained")):
        how = "bare" if side == "bare" else "contained, sandbox: auto"
        if f"bigrepo_start{suffix}" in only:
            report(
                f"bigrepo_start{suffix}",
                best[f"start_{side}"],
                best["worktree_add"],
                f"harness start ({how}: worktree + first commit) {best[f'start_{side}']:.2f} s, "
                f"git -c checkout.workers=0 worktree add {best['worktree_add']:.2f} s {per}",
            )
        if f"bigrepo_step{suffix}" in only:
            report(
                f"bigrepo_step{suffix}",
                best[f"step_{side}"],
                best["commit"],
                f"harness per step ({how}, commands excluded) {best[f'step_{side}'] * 1000:.0f} ms, "
                f"git add -A && git commit {best['commit'] * 1000:.0f} ms {per}",
                "ms",
            )


def bench_jobs(base: Path, keys: Path, reps: int) -> None:
    """40 goals, each a build and a judge sleeping 0.5 s, run to parked at eyes, with
    `--jobs 1` and `--jobs 4` alternately (a fresh copy of the repository each time)."""
    ids = [f"jobs-{n:02d}" for n in range(1, JOBS_GOALS + 1)]
    texts = {gid: goal_yaml(gid, JOBS_SLEEP, JOBS_SLEEP, "true") for gid in ids}
    repo = managed_repo(base / "jobs", keys, texts)
    env = _bare_env()
    bench.settle()
    best = Best.of("1", "4")
    for rep in range(reps):
        for jobs in ("1", "4"):
            copy = base / f"jobs-{rep}-{jobs}"
            shutil.copytree(repo.root, copy, symlinks=True)
            seconds = _timed_run([*harness_cmd(), "run", "--jobs", jobs], copy, env, {0})
            heads = git(copy, "for-each-ref", "--format=%(refname)", "refs/heads/harness/")
            if len(heads.splitlines()) != JOBS_GOALS:
                raise SystemExit(f"bench: --jobs {jobs} did not run every goal")
            best.add(jobs, seconds)
            shutil.rmtree(copy)
    report(
        "jobs_scaling",
        best["4"],
        best["1"],
        f"--jobs 4 {best['4']:.1f} s, --jobs 1 {best['1']:.1f} s ({JOBS_GOALS} goals, "
        f"build and judge {JOBS_SLEEP}, {os.cpu_count()} cpus, best of {reps})",
    )
