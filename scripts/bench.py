"""Audit at scale: time the harness on generated repositories against floors measured in
the same run, and print one line per metric: `name ratio=<x> target=<y>`.

Every ratio is (best harness time) / (best floor time), each the minimum of `--reps`
repetitions taken alternately in this run, so a busy machine slows both sides alike.
(runners_8x4 is the one exception: 8 runners' wall time over one runner's, same goals.)
Details (absolute times, sizes, memory) go to stderr; stdout carries only the metric lines.
The metrics, their floors and the figures measured are in docs/specs/performance.md.

The generator writes ledger lines itself (bulk writes, no fsync per line), byte for byte
as `Ledger.append` writes them: a self-check at the start of every run compares its output
with `Ledger.append`'s for the same events, and every timed `harness verify` must report
the generated goal as ok, which proves the lines, the chain, the MACs, the folded cell and
the approval all check out. Past BLOCK events the planned events repeat (sequence, chain,
time and MAC stay unique per line), so a million events take seconds, not minutes.

With verify_1m, one event in a middle segment of the big ledger is then edited and
`harness verify --json` must name exactly its segment and line (the bytes are put back);
any other answer stops the bench.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import functools
import hashlib
import hmac
import itertools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if __name__ == "__main__":  # bench_scale imports this module by name: one copy, not two
    sys.modules.setdefault("bench", sys.modules[__name__])

# Fixed identities and no user or system git config, set before harness (and git) runs.
os.environ.update(
    {
        "GIT_AUTHOR_NAME": "Bench Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Bench Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
)
for _name in ("HARNESS_SECRET", "HARNESS_SECRET_FILE", "HARNESS_FAILPOINT"):
    os.environ.pop(_name, None)

from harness.commands.demo import make_owner_key  # noqa: E402
from harness.loop.clock import SystemClock  # noqa: E402
from harness.loop.recorder import Recorder, call_id  # noqa: E402
from harness.record import fold as fold_module  # noqa: E402
from harness.record.cell import Cell, cell_bytes  # noqa: E402
from harness.record.fold import apply  # noqa: E402
from harness.record.hydrate import GoalPaths, committed_view, load  # noqa: E402
from harness.record.ledger import SEGMENT_BYTES, Event, Ledger, segment_name  # noqa: E402
from harness.record.position import GENESIS, Position  # noqa: E402
from harness.record.render import REPORT_TAIL_EVENTS, MarkdownReport  # noqa: E402
from harness.store.catfile import tree_without_entry  # noqa: E402
from harness.store.fsutil import canonical_json  # noqa: E402
from harness.store.objects import ObjectReader  # noqa: E402
from harness.store.worktree import Worktree  # noqa: E402
from harness.trust.approvals import format_record  # noqa: E402
from harness.trust.checkpoint import signed_checkpoint  # noqa: E402
from harness.trust.runnerkey import new_runner_key  # noqa: E402
from harness.trust.runners import statement_bytes as runners_statement  # noqa: E402
from harness.trust.secret import Secret  # noqa: E402
from harness.trust.sshsig import sign  # noqa: E402
from harness.trust.statement import Statement  # noqa: E402

SECRET = "bench-secret-for-timing-only-never-a-real-one-0123456789"
OWNER = "bench-owner@example.com"
BIG_GOAL = "audit-1m"
SMALL_GOAL = "audit-100k"
CHECKPOINT_GOAL = "checkpoint"
CHECKPOINT_EVENTS = 2_000
BLOCK = 20_000  # distinct planned events in a generated ledger; longer ones repeat them
FLEET = 1_000
NOOP_GOALS = 10
TARGETS = {
    "verify_1m": 1.5,
    "verify_1m_nosecret": 1.5,
    "replay_1m": 2.0,
    "verify_memory": 1.1,
    "checkpoint": 2.0,
    "status_1000": 5.0,
    "noop_run": 5.0,
    "sandbox_step": 1.1,
    "sandbox_fixed": 2.0,
    "sandbox_layer": 3.0,
    "bigrepo_step": 1.5,
    "bigrepo_start": 1.3,
    "bigrepo_step_contained": 1.5,
    "bigrepo_start_contained": 1.3,
    "status_10000": 5.0,
    "jobs_scaling": 0.34,
    "runners_8x4": 1.0,
    "runners_8x4_agents": 0.35,
    "redact_1mib": 15.0,
    "egress_overhead": 1.3,
    "egress_start": 1.0,  # (allowlist - shared) / 50 ms: at most 50 ms later
}
BIGREPO = {"bigrepo_step", "bigrepo_start", "bigrepo_step_contained", "bigrepo_start_contained"}
_T0_MS = calendar.timegm((2026, 11, 29, 8, 0, 0)) * 1000

# The floor: read the same segment files, SHA-256 each line, parse it with `json`.
FLOOR = r"""
import hashlib, json, os, sys
folder, n = sys.argv[1], 0
for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), "rb") as handle:
        for line in handle:
            hashlib.sha256(line).hexdigest()
            json.loads(line)
            n += 1
print(n)
"""

# Runs one command and reports its wall time (interpreter start included) and its peak
# RSS: a fresh process per measurement, so RUSAGE_CHILDREN sees only that command.
MEASURE = r"""
import json, resource, subprocess, sys, time
sink = subprocess.DEVNULL if sys.argv[1] == "devnull" else subprocess.PIPE
started = time.perf_counter()
proc = subprocess.run(sys.argv[2:], stdout=sink, stderr=subprocess.PIPE)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
out = (proc.stdout or b"").decode("utf-8", "replace")[:2000]
err = proc.stderr.decode("utf-8", "replace")[-2000:]
print(json.dumps({"seconds": seconds, "peak_kib": peak, "rc": proc.returncode, "out": out, "err": err}))
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True)
    if proc.returncode:
        raise SystemExit(f"bench: git {' '.join(args[:3])} in {cwd}: {proc.stderr.decode()}")
    return proc.stdout.decode().strip()


def harness_cmd() -> list[str]:
    script = Path(sys.executable).with_name("harness")
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness"]


def harness_env() -> dict[str, str]:
    return {**os.environ, "HARNESS_SECRET": SECRET}


def goal_key(goal_id: str) -> bytes:
    return Secret(SECRET.encode()).goal_key(goal_id)


# ---- realistic events ------------------------------------------------------------------


@dataclass(frozen=True)
class GoalMeta:
    goal_id: str
    goal_sha256: str
    owners_sha256: str
    control_commit: str


_WORDS_TEXT = (
    "src/login.py tests/test_login.py session timeout retry token expired handler config "
    "assert AssertionError expected got None refresh cookie middleware request response "
    "def return raise await async client server cache redis queue worker import module "
    "patch diff hunk applied reverted lint mypy ruff passed failed error warning fixture"
)
_WORDS = _WORDS_TEXT.split()


class Texts:
    """Pools of output-like text, so each event is realistic and generation stays fast."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.build = [self._build_tail(n) for n in range(48)]
        self.judge = [self._judge_tail(n) for n in range(48)]
        self.summaries = [self._sentence(8, 16) for _ in range(32)]

    def _sentence(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(low, high)))

    def _build_tail(self, n: int) -> str:
        lines = [
            f"Reading src/mod_{n:03d}.py",
            f"Editing src/mod_{n:03d}.py: +{n % 17 + 2} -{n % 5}",
        ]
        lines += [self._sentence(3, 10) for _ in range(self.rng.randint(1, 5))]
        lines.append(f"Ran tests/test_mod_{n:03d}.py: {n % 9} failed, {n % 23 + 4} passed")
        return "\n".join(lines) + "\n"

    def _judge_tail(self, n: int) -> str:
        lines = [
            f"FAILED tests/test_mod_{n:03d}.py::test_case_{n % 11} - AssertionError: "
            + self._sentence(3, 8),
            f"E       assert {n * 37 % 1000} == {n * 41 % 1000}",
        ]
        lines += [f"tests/test_mod_{n:03d}.py:{n + 10}: " + self._sentence(2, 7)]
        lines.append(f"{n % 4 + 1} failed, {n % 31 + 5} passed in {n % 7 + 1}.{n % 10}2s")
        return "\n".join(lines) + "\n"


Planned = tuple[str, str | None, int, dict[str, Any]]


def scenario(
    meta: GoalMeta, rng: random.Random, rounds: int | None, ending: str
) -> Iterator[Planned]:
    """Events as the controller writes them: goal.started, then build/judge rounds with
    repairs, an occasional review, cut-off build and budget extension. With `rounds`, the
    goal then ends `parked` at eyes, `completed`, at `attention` or `running` (in flight)."""
    texts = Texts(rng)
    hexes = [hashlib.sha1(str(n).encode()).hexdigest() for n in range(64)]
    limits = {"iterations": 25, "seconds": 7200, "cost_usd": 20.0, "turns": 300, "passes": 120}
    yield (
        "goal.started",
        None,
        0,
        {
            "goal_sha256": meta.goal_sha256,
            "owners_sha256": meta.owners_sha256,
            "approved_by": [OWNER],
            "steps": ["build", "judge", "review", "ship"],
            "limits": dict(limits),
            "no_progress_passes": 2,
            "control_commit": meta.control_commit,
        },
    )
    gid = meta.goal_id

    def started(step: str, i: int) -> Planned:
        return (
            "step.started",
            step,
            i,
            {"call_id": call_id(gid, i, step), "base": hexes[(i * 7) % 64]},
        )

    def base(step: str, i: int, code: int, tail: str) -> dict[str, Any]:
        return {
            "call_id": call_id(gid, i, step),
            "exit_code": code,
            "timed_out": False,
            "duration_s": round(rng.uniform(0.4, 90.0), 3),
            "output_tail": tail,
        }

    def build(i: int) -> Iterator[Planned]:
        yield started("build", i)
        data = base("build", i, 0, texts.build[i % 48]) | {
            "cost_usd": round(rng.uniform(0.001, 0.09), 4),
            "turns": rng.randint(1, 9),
            "summary": texts.summaries[i % 32],
            "agent_error": None,
            "changed": [f"src/mod_{(i + k) % 200:03d}.py" for k in range(i % 3 + 1)],
            "tree": hexes[i % 64],
        }
        yield ("step.finished", "build", i, data)

    def check(step: str, i: int, passed: bool) -> Iterator[Planned]:
        yield started(step, i)
        tail = "42 passed in 3.21s\n" if passed else texts.judge[i % 48]
        data = base(step, i, 0 if passed else 1, tail) | {"result": "pass" if passed else "fail"}
        if step == "judge":
            data["failing_test"] = (
                None if passed else f"tests/test_mod_{i % 48:03d}.py::test_case_{i % 11}"
            )
        else:
            data["stdout_tail"] = "looks good\n" if passed else texts.summaries[i % 32] + "\n"
        data["tree"] = hexes[i % 64]
        yield ("step.finished", step, i, data)

    def gated(i: int, status: str, reason: str, detail: str) -> Planned:
        # As Recorder.gate writes it.
        data = {"status": status, "reason": reason, "detail": detail, "commit": hexes[i % 64]}
        return ("goal.gated", None, i, data)

    def decided(i: int, decision: str, gate: str, extra: dict[str, Any]) -> Planned:
        # As GoalRunner.cross_gate writes it.
        data = {
            "decision": decision,
            "gate": gate,
            "signers": [OWNER],
            "commit": hexes[i % 64],
            "ledger": f"{i * 4}:{hexes[(i + 1) % 64]}{hexes[(i + 2) % 64][:24]}",
            "signature_sha256": hexes[(i + 3) % 64] + hexes[(i + 4) % 64][:24],
        }
        return ("decision.used", None, i, data | extra)

    def parked(i: int) -> Iterator[Planned]:
        yield from build(i)
        yield from check("judge", i, True)
        yield from check("review", i, True)
        detail = f"commit {hexes[i % 64]} passed the done gate; ship needs a signed decision"
        yield gated(i, "parked_at_eyes", "ship", detail)

    i = 1
    while rounds is None or i <= rounds:
        if i % 97 == 0:
            yield started("build", i)
            cutoff = {"call_id": call_id(gid, i, "build"), "changed": ["src/mod_001.py"]}
            yield ("step.cutoff", "build", i, cutoff)
        yield from build(i)
        review = i % 7 == 0
        yield from check("judge", i, review)
        if review:
            yield from check("review", i, False)
        if i % 25 == 0:
            spent = f"iterations {limits['iterations']}/{limits['iterations']}"
            yield gated(i + 1, "needs_attention", "budget_exhausted", spent)
            more = limits["iterations"] + 25
            limits = limits | {"iterations": more, "passes": limits["passes"] + 120}
            decision = f"extend-budget iterations={more}"
            yield decided(i + 1, decision, "budget_exhausted", {"limits": dict(limits)})
        i += 1
    if ending == "parked":
        yield from parked(i)
    elif ending == "completed":
        yield from parked(i)
        yield decided(i, "ship", "ship", {})
        yield started("ship", i)
        yield ("step.finished", "ship", i, base("ship", i, 0, "shipped\n") | {"result": "pass"})
        yield ("goal.completed", None, i, {"commit": hexes[i % 64], "detail": "shipped"})
    elif ending == "attention":
        detail = f"failing tests/test_mod_001.py::test_case_1 with an unchanged tree for 2 passes (round {i})"
        yield gated(i, "needs_attention", "no_progress", detail)
    elif ending == "running":
        yield started("build", i)


# ---- writing ledgers in bulk -------------------------------------------------------------


def _fast_replace(obj: Any, **changes: Any) -> Any:
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__, **changes)
    return new


@contextlib.contextmanager
def fast_fold() -> Iterator[None]:
    """`fold.apply` with a dict-copying `replace`: the same values for these plain frozen
    dataclasses, several times faster. Only the generator uses it; the harness under test
    folds with its own code, and verify refuses the goal if the two folds differ."""
    original = vars(fold_module)["replace"]
    setattr(fold_module, "replace", _fast_replace)  # noqa: B010 - a typed assignment would not check
    try:
        yield
    finally:
        setattr(fold_module, "replace", original)  # noqa: B010


# fsutil.canonical_json's options, with one encoder made once instead of one per call.
_canonical = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


@functools.lru_cache(maxsize=4096)
def _atom(value: str | None) -> bytes:
    return canonical_json(value)


class LedgerWriter:
    """Writes one goal's ledger exactly as `Ledger.append` would, a segment at a time."""

    def __init__(
        self,
        goal_id: str,
        key: bytes,
        on_segment: Callable[[str, bytes], None],
        segment_bytes: int = SEGMENT_BYTES,
    ) -> None:
        self.goal_id = goal_id
        self._goal = canonical_json(goal_id)
        self._mac = hmac.new(key, b"harness-event\x00", hashlib.sha256)
        self._on_segment = on_segment
        self._limit = segment_bytes
        self._lines: list[bytes] = []
        self._size = 0
        self._index = 1
        self._ts = _T0_MS
        self._day, self._date = -1, ""
        self.head = Position(0, GENESIS)
        self.cell = Cell(goal=goal_id)
        self.tail: deque[Event] = deque(maxlen=REPORT_TAIL_EVENTS)
        self.keep_stamps = False
        self.stamps: list[str] = []
        self.bytes = 0

    def stamp(self) -> str:
        """The next event's time, 1 to 91 seconds after the last, in the ledger's format."""
        self._ts += 1000 + (self.head.seq * 7919) % 90_000
        seconds, ms = divmod(self._ts, 1000)
        day, second = divmod(seconds, 86_400)
        if day != self._day:
            self._day, self._date = day, time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))
        hour, rest = divmod(second, 3600)
        return f"{self._date}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}.{ms:03d}Z"

    def add(
        self,
        type: str,
        step: str | None,
        iteration: int,
        data: dict[str, Any],
        ts: str,
        data_json: bytes | None = None,
    ) -> None:
        seq, prev = self.head.seq + 1, self.head.hash
        # Keys in sorted order: data, goal, iter, prev, seq, step, ts, type, v.
        body = b"".join(
            (
                b'{"data":',
                data_json or _canonical(data).encode(),
                b',"goal":',
                self._goal,
                b',"iter":%d,"prev":"%s","seq":%d,"step":' % (iteration, prev.encode(), seq),
                _atom(step),
                b',"ts":"',
                ts.encode(),  # stamp() writes plain ASCII: nothing to escape
                b'","type":',
                _atom(type),
                b',"v":1}',
            )
        )
        mac = self._mac.copy()
        mac.update(body)
        line = b'{"e":' + body + b',"mac":"' + mac.hexdigest().encode() + b'"}\n'
        if self._size and self._size + len(line) > self._limit:
            self._close_segment()
        self._lines.append(line)
        self._size += len(line)
        self.bytes += len(line)
        self.head = Position(seq, hashlib.sha256(line).hexdigest())
        event = Event(seq, ts, type, self.goal_id, step, iteration, data, prev)
        self.cell = apply(self.cell, event, self.head)
        self.tail.append(event)

    def add_all(self, planned: Iterator[Planned], count: int | None = None) -> None:
        """`count` events (all of `planned` when None). Past BLOCK events the first BLOCK
        planned events repeat (seq, prev, ts and MAC stay unique), so a million lines cost
        a fiftieth of the JSON encoding; the fold still sees every event."""
        block = list(itertools.islice(planned, BLOCK if count is None else min(count, BLOCK)))
        if count is None:
            block += list(planned)
            count = len(block)
        encoded = [_canonical(data).encode() for _, _, _, data in block]
        with fast_fold():
            for n in range(count):
                type, step, iteration, data = block[n % len(block)]
                ts = self.stamp()
                if self.keep_stamps:
                    self.stamps.append(ts)
                self.add(type, step, iteration, data, ts, encoded[n % len(block)])

    def _close_segment(self) -> None:
        self._on_segment(segment_name(self._index), b"".join(self._lines))
        self._lines, self._size = [], 0
        self._index += 1

    def finish(self, key: bytes) -> tuple[bytes, bytes]:
        """Flush the last segment; the attested cell and the report, as the controller writes them."""
        if self._lines:
            self._close_segment()
        report = MarkdownReport(self.goal_id)
        for event in self.tail:
            report.add(event)
        report.count = self.head.seq  # the report shows the tail; it counts every event
        return cell_bytes(self.cell, key), report.render(self.cell).encode()


def write_goal_files(
    folder: Path, goal_id: str, planned: Iterator[Planned], count: int | None
) -> LedgerWriter:
    events = folder / "ledger" / goal_id / "events"
    events.mkdir(parents=True, exist_ok=True)
    key = goal_key(goal_id)

    def write(name: str, data: bytes) -> None:
        (events / name).write_bytes(data)

    writer = LedgerWriter(goal_id, key, write)
    writer.add_all(planned, count)
    cell, report = writer.finish(key)
    (events.parent / "state.json").write_bytes(cell)
    (events.parent / "report.md").write_bytes(report)
    return writer


def self_check(tmp: Path) -> None:
    """The generator's bytes are `Ledger.append`'s bytes, segments included, and its cell is
    the real fold."""
    meta = GoalMeta("self-check", "a" * 64, "b" * 64, "c" * 40)
    count, limit = 300, 24_000
    key = goal_key(meta.goal_id)
    produced: dict[str, bytes] = {}
    writer = LedgerWriter(meta.goal_id, key, produced.__setitem__, limit)
    writer.keep_stamps = True
    writer.add_all(scenario(meta, random.Random(7), None, "running"), count)
    writer.finish(key)
    ledger = Ledger(tmp / "events", meta.goal_id, key, limit)
    ledger.load()
    planned = itertools.islice(scenario(meta, random.Random(7), None, "running"), count)
    for (type, step, iteration, data), ts in zip(planned, writer.stamps, strict=True):
        ledger.append(type, step, iteration, data, ts)
    written = {p.name: p.read_bytes() for p in sorted((tmp / "events").iterdir())}
    if written != produced or len(written) < 3:
        raise SystemExit(
            "bench: self-check failed: the generator's lines differ from Ledger.append's"
        )
    records = Ledger(tmp / "events", meta.goal_id, key, limit).load()
    cell = Cell(goal=meta.goal_id)
    for record in records:
        cell = apply(cell, record.event, Position(record.event.seq, record.hash))
    if cell != writer.cell or ledger.head != writer.head:
        raise SystemExit("bench: self-check failed: the generator's fold differs from fold.apply")
    say(
        f"self-check: {count} generated events in {len(written)} segments equal Ledger.append's bytes"
    )


# ---- repositories ------------------------------------------------------------------------


def goal_yaml(goal_id: str, build: str, judge: str, ship: str) -> str:
    return f"""version: 1
id: {goal_id}
owner: {OWNER}
objective: |
  Make tests/test_login.py pass without changing the public API.
build:
  run: [sh, -c, {json.dumps(build)}]
  timeout: 60s
judge:
  run: [sh, -c, {json.dumps(judge)}]
  timeout: 60s
ship:
  run: [sh, -c, {json.dumps(ship)}]
budget:
  max_iterations: 3
halt:
  no_progress_passes: 2
  max_passes: 20
"""


@dataclass
class Managed:
    root: Path
    main: str
    metas: dict[str, GoalMeta]


def managed_repo(root: Path, keys: Path, goal_texts: dict[str, str]) -> Managed:
    """A committed main branch: owners, approved goals, and a small project to work on."""
    key_path = keys / "owner"
    public = (keys / "owner.pub").read_text().strip()
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    owners = f"{OWNER} {public}\n"
    files = {
        ".gitignore": "__pycache__/\n/.harness/worktrees/\n",
        ".harness/config.yaml": "version: 1\n",
        ".harness/owners": owners,
    }
    for n in range(200):
        body = "".join(
            f"def handler_{n}_{k}(request):\n    return request.get({k!r})\n\n" for k in range(24)
        )
        files[f"src/mod_{n:03d}.py"] = body
    for n in range(48):
        files[f"tests/test_mod_{n:03d}.py"] = (
            f"from src.mod_{n:03d} import handler_{n}_0\n\n\ndef test_case_0():\n    assert handler_{n}_0({{0: 1}}) == 1\n"
        )
    for goal_id, text in goal_texts.items():
        files[f"goals/{goal_id}.yaml"] = text
        statement = Statement(
            goal=goal_id, sha256=hashlib.sha256(text.encode()).hexdigest(), decision="run"
        )
        files[f"goals/{goal_id}.approval"] = format_record(
            statement, sign(statement.to_bytes(), key_path)
        )
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "set up: owners, goals and their approvals")
    main = git(root, "rev-parse", "HEAD")
    owners_sha = hashlib.sha256(owners.encode()).hexdigest()
    metas = {
        gid: GoalMeta(gid, hashlib.sha256(text.encode()).hexdigest(), owners_sha, main)
        for gid, text in goal_texts.items()
    }
    return Managed(root, main, metas)


def generated_worktree(
    repo: Managed, goal_id: str, count: int, ending: str = "running"
) -> tuple[Path, Iterator[Planned]]:
    """The goal's branch in its worktree with `count` generated events, cell and report committed.
    Returns the worktree and the rest of the scenario (for the checkpoint metric)."""
    wt = repo.root / ".harness" / "worktrees" / goal_id
    git(repo.root, "worktree", "add", "-q", "-b", f"harness/{goal_id}", str(wt), "main")
    planned = scenario(repo.metas[goal_id], random.Random(goal_id), None, ending)
    started = time.perf_counter()
    writer = write_goal_files(wt, goal_id, planned, count)
    made = time.perf_counter() - started
    git(wt, "-c", "core.looseCompression=0", "add", "-A")
    git(wt, "commit", "-q", "-m", f"harness({goal_id}): {count} events")
    say(
        f"generated {goal_id}: {count} events, {writer.bytes / 2**20:.0f} MiB "
        f"({writer.bytes / count:.0f} bytes/event) in {made:.1f} s; committed in "
        f"{time.perf_counter() - started - made:.1f} s"
    )
    return wt, planned


ENDINGS = ("parked", "attention", "running", "completed")


def fleet_repo(base: Path, keys: Path, count: int, name: str = "fleet") -> Managed:
    """`count` goals on main, each with a branch holding a short real ledger and its cell,
    made in one `git fast-import` stream."""
    ids = [f"fleet-{n:05d}" for n in range(1, count + 1)]
    text = goal_yaml("{id}", "true", "true", "true")
    repo = managed_repo(base / name, keys, {gid: text.replace("{id}", gid) for gid in ids})
    stream = bytearray()
    for n, gid in enumerate(ids):
        files: dict[str, bytes] = {}
        key = goal_key(gid)

        def keep(name: str, data: bytes, gid: str = gid, files: dict[str, bytes] = files) -> None:
            files[f"ledger/{gid}/events/{name}"] = data

        writer = LedgerWriter(gid, key, keep)
        rounds = 1 + (n * 7) % 6
        writer.add_all(scenario(repo.metas[gid], random.Random(n), rounds, ENDINGS[n % 4]))
        cell, report = writer.finish(key)
        files[f"ledger/{gid}/state.json"] = cell
        files[f"ledger/{gid}/report.md"] = report
        message = f"harness({gid}): {json.loads(cell)['status']}".encode()
        stream += b"commit refs/heads/harness/%s\n" % gid.encode()
        stream += b"committer goal-harness <harness@goal-harness.invalid> %d +0000\n" % (
            _T0_MS // 1000 + n
        )
        stream += b"data %d\n%s\nfrom %s\n" % (len(message), message, repo.main.encode())
        for path, data in files.items():
            stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
    git(repo.root, "fast-import", "--quiet", input=bytes(stream))
    say(f"generated {count} goal branches ({len(stream) / 2**20:.1f} MiB fast-import stream)")
    return repo


def noop_repo(base: Path, keys: Path) -> Managed:
    """Goals run for real (a sh agent and judge) until each is parked at eyes before ship."""
    texts = {
        f"noop-{n:02d}": goal_yaml(
            f"noop-{n:02d}",
            f"echo right > value.txt; echo build {n}",
            "grep -q right value.txt",
            "touch SHIPPED",
        )
        for n in range(1, NOOP_GOALS + 1)
    }
    repo = managed_repo(base / "noop", keys, texts)
    proc = subprocess.run(
        [*harness_cmd(), "run"], cwd=repo.root, env=harness_env(), capture_output=True
    )
    rows = status_rows(repo.root)
    if (
        proc.returncode
        or {r["status"] for r in rows} != {"parked_at_eyes"}
        or len(rows) != NOOP_GOALS
    ):
        raise SystemExit(f"bench: the no-op goals did not park: {proc.stderr.decode()} {rows}")
    say(f"ran {NOOP_GOALS} goals to parked_at_eyes")
    return repo


def status_rows(root: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [*harness_cmd(), "status", "--json"], cwd=root, env=harness_env(), capture_output=True
    )
    if proc.returncode:
        raise SystemExit(f"bench: harness status failed: {proc.stderr.decode()}")
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


# ---- timing ------------------------------------------------------------------------------


SANDBOX_METRICS = {"sandbox_step", "sandbox_fixed", "sandbox_layer"}
# A step costs the harness a fork of its own process unless it is a build (sandbox.md, "A
# step ends with the harness"), and a fork costs what the process maps: the sandbox metrics
# run in a process the size of `harness run` (about 25 MiB), not in this one after it has
# generated a million events, where every bare step's fork would cost more than a run's.
LEAN = "HARNESS_BENCH_LEAN"


def lean_child(metrics: set[str], reps: int) -> None:
    """`metrics` measured by a fresh bench process of its own (its lines are this run's)."""
    argv = [sys.executable, __file__, "--only", ",".join(sorted(metrics)), "--reps", str(reps)]
    sys.stdout.flush()
    done = subprocess.run(
        [*argv, *(["--json"] if JSON_LINES else [])], env=os.environ | {LEAN: "1"}, check=False
    )
    if done.returncode:
        raise SystemExit(f"bench: the sandbox metrics' process exited {done.returncode}")


def peak_mib() -> float:
    """This process's peak resident size so far, MiB (Linux counts KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def settle() -> None:
    """Wait until what earlier generation wrote is on the disk (`sync`), so that its
    write-back does not slow whichever side is timed next; says how long that took."""
    started = time.perf_counter()
    os.sync()
    say(f"settle: sync took {time.perf_counter() - started:.1f} s")


def timed(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None, stdout: Any = subprocess.PIPE
) -> tuple[float, bytes]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(
            f"bench: {' '.join(cmd[:4])} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}"
        )
    return elapsed, proc.stdout or b""


@dataclass
class Best:
    """The best (minimum) of several repetitions of each side."""

    sides: dict[str, list[float]]

    @classmethod
    def of(cls, *names: str) -> Best:
        return cls({name: [] for name in names})

    def add(self, name: str, value: float) -> None:
        self.sides[name].append(value)

    def __getitem__(self, name: str) -> float:
        return min(self.sides[name])


UNITS = {"s": 1.0, "ms": 1000.0, "MiB": 1.0}
JSON_LINES = False  # --json: each metric's line is a JSON object instead of text


def report(
    name: str,
    harness: float,
    floor: float,
    detail: str,
    unit: str = "s",
    figures: dict[str, float] | None = None,
    ratio: float | None = None,
) -> None:
    """One metric: its ratio (`harness` over `floor`, seconds or MiB, unless the metric
    defines its own) and both sides, shown in `unit`, on stdout (text, or one JSON object
    with --json); `detail` goes to stderr."""
    ratio = harness / floor if ratio is None else ratio
    scale = UNITS[unit]
    sides = {"harness": round(harness * scale, 4), "floor": round(floor * scale, 4)}
    extra = {key: round(value, 4) for key, value in (figures or {}).items()}
    say(f"{name}: {detail}")
    if JSON_LINES:
        row = {"metric": name, "ratio": round(ratio, 4), "target": TARGETS[name]}
        row |= {"met": ratio <= TARGETS[name], **sides, "unit": unit, **extra}
        print(json.dumps(row, sort_keys=False), flush=True)
        return
    shown = "".join(f" {key}_{unit.lower()}={value:g}" for key, value in sides.items())
    shown += "".join(f" {key}={value:g}" for key, value in extra.items())
    print(f"{name} ratio={ratio:.2f} target={TARGETS[name]}{shown}", flush=True)


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float
    out: str


def measured(
    cmd: list[str], cwd: Path, *, devnull: bool = False, env: dict[str, str] | None = None
) -> Run:
    """One run of `cmd` through MEASURE; any exit but 0 stops the bench."""
    helper = [sys.executable, "-c", MEASURE, "devnull" if devnull else "pipe", *cmd]
    _, raw = timed(helper, cwd, env or harness_env())
    result = json.loads(raw)
    if result["rc"]:
        raise SystemExit(
            f"bench: {' '.join(cmd[:4])} exited {result['rc']}: {result['out']} {result['err']}"
        )
    return Run(result["seconds"], result["peak_kib"] / 1024, result["out"])


def verified(repo: Managed, goal_id: str, events: int) -> Run:
    run = measured([*harness_cmd(), "verify", goal_id], repo.root)
    if not run.out.startswith(f"ok {goal_id}: {events} events"):
        raise SystemExit(f"bench: verify did not pass: {run.out}")
    return run


def sign_as_runner(repo: Managed, keys: Path, goal_id: str) -> dict[str, str]:
    """Owners list a runner (`.harness/runners`, signed) and the goal's committed head gets
    that runner's checkpoint signature, as a runner with a key leaves every head (issue 31).
    Returns an environment without the secret: a reviewer's clone."""
    key = new_runner_key(keys / "runner-key", None)
    runners = f"runner-1 {key.public_line}\n".encode()
    statement = runners_statement(runners)
    (repo.root / ".harness" / "runners").write_bytes(runners)
    signed = statement.decode() + sign(statement, keys / "owner")
    (repo.root / ".harness" / "runners.sig").write_text(signed)
    git(repo.root, "add", ".harness")
    git(repo.root, "commit", "-q", "-m", "list runner-1")
    wt = repo.root / ".harness" / "worktrees" / goal_id
    folder = wt / "ledger" / goal_id
    cell = (folder / "state.json").read_bytes()
    at = json.loads(cell)["position"]
    reader = ObjectReader(wt)
    tree = tree_without_entry(reader, "HEAD^{tree}", "ledger")
    reader.close()
    assert tree is not None
    head = Position(at["seq"], at["hash"])
    (folder / "checkpoint.sig").write_bytes(signed_checkpoint(key, goal_id, head, cell, tree[0]))
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", f"harness({goal_id}): signed by runner-1")
    env = {k: v for k, v in harness_env().items() if k != "HARNESS_SECRET"}
    return env | {"XDG_CONFIG_HOME": str(keys / "reviewer-config")}


def bench_ledger(repo: Managed, events: int, small: int, reps: int, only: set[str]) -> None:
    """verify and replay of the big ledger against the floor, run alternately; peak RSS of
    verify at `events` against `small` events."""
    folder = repo.root / ".harness" / "worktrees" / BIG_GOAL / "ledger" / BIG_GOAL / "events"
    replay = [*harness_cmd(), "replay", BIG_GOAL, "--format", "text"]
    best = Best.of("floor", "verify", "replay", "peak", "small_peak", "small_verify", "nosecret")
    reviewer = sign_as_runner(repo, repo.root.parent / "keys", BIG_GOAL)
    settle()  # the generation wrote ~1 GiB (segments and loose objects): not timed here
    for _ in range(reps):
        floor = measured([sys.executable, "-c", FLOOR, str(folder)], repo.root)
        if int(floor.out) != events:
            raise SystemExit(f"bench: the floor read {floor.out.strip()} lines, not {events}")
        best.add("floor", floor.seconds)
        if only & {"verify_1m", "verify_memory"}:
            run = verified(repo, BIG_GOAL, events)
            best.add("verify", run.seconds)
            best.add("peak", run.peak_mib)
        if "verify_memory" in only:
            small_run = verified(repo, SMALL_GOAL, small)
            best.add("small_peak", small_run.peak_mib)
            best.add("small_verify", small_run.seconds)
        if "replay_1m" in only:
            best.add("replay", measured(replay, repo.root, devnull=True).seconds)
        if "verify_1m_nosecret" in only:
            run = measured([*harness_cmd(), "verify", BIG_GOAL], repo.root, env=reviewer)
            if "(verified by runner runner-1 (" not in run.out:
                raise SystemExit(f"bench: verify without the secret did not pass: {run.out}")
            best.add("nosecret", run.seconds)
    per = f"{events:,} events, best of {reps}"
    if "verify_1m" in only:
        report(
            "verify_1m",
            best["verify"],
            best["floor"],
            f"harness verify {best['verify']:.2f} s, floor {best['floor']:.2f} s ({per})",
        )
    if "verify_1m_nosecret" in only:
        report(
            "verify_1m_nosecret",
            best["nosecret"],
            best["floor"],
            f"harness verify without the secret (chain and the runner's signature) "
            f"{best['nosecret']:.2f} s, floor {best['floor']:.2f} s ({per})",
        )
    if "replay_1m" in only:
        report(
            "replay_1m",
            best["replay"],
            best["floor"],
            f"harness replay --format text {best['replay']:.2f} s, floor {best['floor']:.2f} s ({per})",
        )
    if "verify_memory" in only and only & {"verify_1m"}:
        say(
            f"verify cost against size: {best['verify']:.2f} s at {events:,} events, "
            f"{best['small_verify']:.2f} s at {small:,}"
        )
    if "verify_memory" in only:
        report(
            "verify_memory",
            best["peak"],
            best["small_peak"],
            f"peak RSS {best['peak']:.1f} MiB at {events:,} events, {best['small_peak']:.1f} MiB at {small:,}",
            "MiB",
        )


def check_named_corruption(repo: Managed, events: int) -> None:
    """Edit one event in a middle segment of the big ledger and require `harness verify
    --json` to name that segment and line (issue 5, done-when 3); the bytes are put back."""
    folder = repo.root / ".harness" / "worktrees" / BIG_GOAL / "ledger" / BIG_GOAL / "events"
    segments = sorted(folder.iterdir())
    segment = segments[len(segments) // 2]
    original = segment.read_bytes()
    lines = original.splitlines(keepends=True)
    line_no = min(1234, len(lines))
    edited = lines[line_no - 1].replace(b'"ts":"2', b'"ts":"1', 1)  # year 2xxx -> 1xxx
    if edited == lines[line_no - 1]:
        raise SystemExit(f"bench: line {line_no} of {segment.name} has no timestamp to edit")
    segment.write_bytes(b"".join([*lines[: line_no - 1], edited, *lines[line_no:]]))
    try:
        started = time.perf_counter()
        proc = subprocess.run(
            [*harness_cmd(), "verify", "--json", BIG_GOAL],
            cwd=repo.root,
            env=harness_env(),
            capture_output=True,
        )
        seconds = time.perf_counter() - started
    finally:
        segment.write_bytes(original)
    if proc.returncode != 3:
        raise SystemExit(
            f"bench: verify --json of an edited ledger exited {proc.returncode}, not 3: "
            f"{proc.stderr.decode()[-2000:]}"
        )
    failure = json.loads(proc.stdout)["goals"][0].get("failure", {})
    named = (failure.get("segment"), failure.get("line"))
    if named != (segment.name, line_no):
        raise SystemExit(
            f"bench: verify --json did not name {segment.name} line {line_no} "
            f"(exit {proc.returncode}, {failure})"
        )
    say(
        f"verify_1m corruption: edited line {line_no} of {segment.name} (segment "
        f"{len(segments) // 2 + 1} of {len(segments)}, {events:,} events); verify --json named "
        f"segment {named[0]} line {named[1]}, exit 3, in {seconds:.1f} s"
    )


def bench_checkpoint(repo: Managed, wt: Path, planned: Iterator[Planned], reps: int) -> None:
    """One step boundary as the controller does it (append, cell, report, commit) against
    `git add -A && git commit` of the same bytes in a clone of the goal's branch.

    The clone has its own object store on purpose: a second worktree of the same
    repository would find every blob the harness had just written already there and skip
    compressing it, which is most of the work of a commit that adds ledger bytes."""
    settle()
    other = repo.root.parent / "checkpoint-baseline"
    git(
        repo.root.parent,
        "clone",
        "-q",
        "--no-local",
        "--single-branch",
        "--branch",
        f"harness/{CHECKPOINT_GOAL}",
        str(repo.root),
        str(other),
    )
    paths = GoalPaths(wt, CHECKPOINT_GOAL)
    key = goal_key(CHECKPOINT_GOAL)
    loaded = load(paths, key, committed_view(paths), repair=True)
    # As a runner with its own key signs every checkpoint (issue 31).
    signer = new_runner_key(repo.root.parent / "runner-key", None)
    recorder = Recorder(
        CHECKPOINT_GOAL,
        key,
        Worktree(wt),
        paths,
        loaded,
        SystemClock(),
        lambda line: None,
        signer=signer,
    )
    # As a run whose environment holds 20 secrets redacts every event (issue 28).
    recorder.redactor = secret_redactor()
    best = Best.of("harness", "git")
    rel = Path("ledger") / CHECKPOINT_GOAL
    for n in range(reps * 3):
        type, step, iteration, data = next(planned)
        started = time.perf_counter()
        recorder.emit(type, step, iteration, data)
        recorder.checkpoint(f"{step or type} {iteration} bench {n}")
        best.add("harness", time.perf_counter() - started)
        segment = sorted((wt / rel / "events").iterdir())[-1].relative_to(wt)
        written = (rel / "state.json", rel / "report.md", rel / "checkpoint.sig", segment)
        contents = {p: (wt / p).read_bytes() for p in written}
        started = time.perf_counter()
        for path, data_bytes in contents.items():
            (other / path).write_bytes(data_bytes)
        subprocess.run(["git", "add", "-A"], cwd=other, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"baseline {n}"], cwd=other, check=True)
        best.add("git", time.perf_counter() - started)
    report(
        "checkpoint",
        best["harness"],
        best["git"],
        f"emit + checkpoint {best['harness'] * 1000:.1f} ms, git add -A && git commit {best['git'] * 1000:.1f} ms "
        f"(goal of {CHECKPOINT_EVENTS:,} events, best of {reps * 3})",
        "ms",
    )


def bench_status(repo: Managed, count: int, reps: int, metric: str = "status_1000") -> None:
    settle()
    cmd = [*harness_cmd(), "status", "--json"]
    best = Best.of("harness", "git")
    for _ in range(reps):
        seconds, out = timed(cmd, repo.root, harness_env())
        if len(json.loads(out)) != count:
            raise SystemExit("bench: status did not list every goal")
        best.add("harness", seconds)
        started = time.perf_counter()
        _, refs = timed(
            [
                "git",
                "for-each-ref",
                "--format=%(objectname) %(refname:short)",
                "refs/heads/harness/",
            ],
            repo.root,
        )
        specs = []
        for row in refs.decode().splitlines():
            sha, name = row.split(" ", 1)
            gid = name.removeprefix("harness/")
            specs.append(f"{sha}:ledger/{gid}/state.json\n")
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=repo.root,
            input="".join(specs).encode(),
            capture_output=True,
            check=True,
        )
        best.add("git", time.perf_counter() - started)
        if proc.stdout.count(b" blob ") != count:
            raise SystemExit("bench: cat-file did not find every cell")
    report(
        metric,
        best["harness"],
        best["git"],
        f"harness status --json {best['harness'] * 1000:.0f} ms, for-each-ref + cat-file --batch {best['git'] * 1000:.0f} ms ({count:,} goals, best of {reps})",
        "ms",
    )


def bench_noop(repo: Managed, reps: int) -> None:
    settle()
    heads = git(repo.root, "for-each-ref", "refs/heads/harness/")
    best = Best.of("harness", "python")
    for _ in range(reps * 2):
        seconds, out = timed([*harness_cmd(), "run"], repo.root, harness_env())
        if out:
            raise SystemExit(f"bench: a no-op run printed events: {out.decode()}")
        best.add("harness", seconds)
        best.add("python", timed([sys.executable, "-c", "pass"], repo.root)[0])
    if git(repo.root, "for-each-ref", "refs/heads/harness/") != heads:
        raise SystemExit("bench: a no-op run moved a goal branch")
    report(
        "noop_run",
        best["harness"],
        best["python"],
        f"harness run {best['harness'] * 1000:.0f} ms, python -c pass {best['python'] * 1000:.0f} ms ({NOOP_GOALS} parked goals, best of {reps * 2})",
        "ms",
    )


REDACT_VALUES = 20


def secret_values() -> list[str]:
    rng = random.Random(28)
    return ["".join(rng.choices(ALNUM, k=40)) for _ in range(REDACT_VALUES)]


def secret_redactor() -> Any:
    from harness.trust.redact import Redactor

    return Redactor.for_env({f"SERVICE{i}_TOKEN": v for i, v in enumerate(secret_values())})


def bench_redact(reps: int) -> None:
    """The one redactor over 1 MiB of agent-like output holding 20 secret values (and
    their encodings, a few times each), against the floor: a plain `bytes.replace` loop
    over the same 20 values. Issue 28's bound: at most 30 ms on this machine's class of
    CPU; the ratio keeps it honest on a noisy machine."""
    rng = random.Random(1)
    values = secret_values()
    redactor = secret_redactor()
    words = ["".join(rng.choices(ALNUM + "-_./", k=rng.randint(2, 12))) for _ in range(5000)]
    parts: list[str] = []
    size = 0
    while size < 1 << 20:
        line = " ".join(rng.choices(words, k=12))
        if rng.random() < 0.002:
            line += " token=" + rng.choice(values)
        parts.append(line)
        size += len(line) + 1
    text = "\n".join(parts)[: 1 << 20]
    data, raw = text.encode(), [value.encode() for value in values]
    best = Best.of("redact", "floor")
    for _ in range(max(reps, 5)):
        start = time.perf_counter()
        redactor.text(text)
        best.add("redact", time.perf_counter() - start)
        start = time.perf_counter()
        out = data
        for value in raw:
            out = out.replace(value, b"[redacted]")
        best.add("floor", time.perf_counter() - start)
    detail = (
        f"1 MiB against {REDACT_VALUES} values ({len(redactor.forms)} forms): redact "
        f"{best['redact'] * 1000:.1f} ms, bytes.replace loop {best['floor'] * 1000:.1f} ms "
        f"(best of {max(reps, 5)}; bound 30 ms)"
    )
    report("redact_1mib", best["redact"], best["floor"], detail, "ms")


ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


# ---- main --------------------------------------------------------------------------------


def write_bytecode() -> None:
    """Compile the harness's modules, as `pip install` does for a regular install.

    The test venv is an editable install, and with PYTHONDONTWRITEBYTECODE=1 (set on this
    machine and in CI) Python never writes bytecode for it: every harness process would
    compile its modules from source, ~40 ms that no installed harness pays.
    """
    import compileall

    if not compileall.compile_dir(ROOT / "harness", quiet=1):
        raise SystemExit("bench: compiling the harness's modules failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="generate into DIR (new or empty) and leave it there",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions per side (default 3)")
    parser.add_argument(
        "--events", type=int, default=1_000_000, help="events in the big ledger (default 1000000)"
    )
    parser.add_argument(
        "--files", type=int, default=100_000, help="files in the big repository (default 100000)"
    )
    parser.add_argument("--only", default=",".join(TARGETS), help="comma-separated metrics to run")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print each metric as one JSON object (ratio, target, met, both sides) a line",
    )
    args = parser.parse_args(argv)
    global JSON_LINES
    JSON_LINES = args.json
    only = set(args.only.split(","))
    if only - set(TARGETS):
        parser.error(f"--only: unknown metric(s) {', '.join(sorted(only - set(TARGETS)))}")
    if args.keep is not None:
        if args.keep.exists() and any(args.keep.iterdir()):
            parser.error(f"--keep: {args.keep} is not empty")
        args.keep.mkdir(parents=True, exist_ok=True)
        base = args.keep.resolve()
    else:
        base = Path(tempfile.mkdtemp(prefix="harness-bench-"))
    small = max(1, args.events // 10)
    say(f"bench: {base} ({os.cpu_count()} cpus, {sys.version.split()[0]})")
    write_bytecode()
    import bench_egress  # they import this module: after it is whole
    import bench_sandbox
    import bench_scale
    import bench_team

    try:
        self_check(base / "self-check")
        keys = base / "keys"
        make_owner_key(keys)
        if only & {"verify_1m", "verify_1m_nosecret", "replay_1m", "verify_memory", "checkpoint"}:
            ids = (BIG_GOAL, SMALL_GOAL, CHECKPOINT_GOAL)
            audit = managed_repo(
                base / "audit", keys, {g: goal_yaml(g, "true", "true", "true") for g in ids}
            )
            if only & {"verify_1m", "verify_1m_nosecret", "replay_1m", "verify_memory"}:
                generated_worktree(audit, BIG_GOAL, args.events)
            if "verify_memory" in only:
                generated_worktree(audit, SMALL_GOAL, small)
            if only & {"verify_1m", "verify_1m_nosecret", "replay_1m", "verify_memory"}:
                bench_ledger(audit, args.events, small, args.reps, only)
            if "verify_1m" in only:
                check_named_corruption(audit, args.events)
            if "checkpoint" in only:
                wt, rest = generated_worktree(audit, CHECKPOINT_GOAL, CHECKPOINT_EVENTS)
                bench_checkpoint(audit, wt, rest, args.reps)
        if "status_1000" in only:
            bench_status(fleet_repo(base, keys, FLEET), FLEET, args.reps)
        if "status_10000" in only:
            bench_status(
                fleet_repo(base, keys, 10 * FLEET, "fleet10k"),
                10 * FLEET,
                args.reps,
                "status_10000",
            )
        if "noop_run" in only:
            bench_noop(noop_repo(base, keys), args.reps)
        if only & SANDBOX_METRICS and os.environ.get(LEAN) != "1":
            lean_child(only & SANDBOX_METRICS, args.reps)
        elif only & SANDBOX_METRICS:
            say(f"sandbox metrics in a process of {peak_mib():.0f} MiB (lean: {LEAN}=1)")
            sandbox = managed_repo(base / "sandbox", keys, {})
            if "sandbox_step" in only:
                bench_sandbox.bench_sandbox(sandbox, args.reps)
            if "sandbox_fixed" in only:
                bench_sandbox.bench_fixed(sandbox, args.reps)
            if "sandbox_layer" in only:
                bench_sandbox.bench_layer(sandbox, args.reps)
        if only & {"egress_overhead", "egress_start"}:
            egress = managed_repo(base / "egress", keys, {})
            if "egress_overhead" in only:
                bench_egress.bench_egress_overhead(egress, args.reps)
            if "egress_start" in only:
                bench_egress.bench_egress_start(egress, args.reps)
        if only & BIGREPO:
            bench_scale.bench_bigrepo(base, keys, args.reps, only, args.files)
        if "jobs_scaling" in only:
            bench_scale.bench_jobs(base, keys, args.reps)
        for metric in ("runners_8x4", "runners_8x4_agents"):
            if metric in only:
                bench_team.bench_runners(base / "team", keys, args.reps, metric)
        if "redact_1mib" in only:
            bench_redact(args.reps)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
        else:
            say(
                f"kept: {base} (audit/, fleet/, noop/; secret: HARNESS_SECRET={SECRET}); "
                f"e.g. cd {base}/audit && time harness verify {BIG_GOAL}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
