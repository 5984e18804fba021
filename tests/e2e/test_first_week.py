"""docs/guide/first-week.md, run as written (issue 30): a bare origin, a runner clone under
(simulated) cron holding the secret, an owner's laptop clone without it, a nightly goal over
four nights, the notify webhook on 127.0.0.1 and the GitHub matrix's filter.

Each `sh` block of the page runs in the home of the machine its first line names, in the
page's order, with the harness's clock set to that block's moment of the week
(`HARNESS_NOW`). Between blocks, cron's ticks run the very line `harness ci cron` printed on
the runner. The only words changed are the origin's URL and the webhook's URL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_notify import Hook
from tests.managed import git, make_key

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "first-week.md"
BIN = str(Path(sys.executable).parent)
ORIGIN_URL = "git@github.com:acme/app.git"
WEBHOOK_URL = "https://hooks.example.com/services/T000/B000/XXXX"
# The runner's key as the page lists it; the runner made its own, and this run lists that.
RUNNER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGTScRPdfw4U53NWF9i1bhxpt2qFY2Ejt2oFsENZRKQt"
GOAL = "nightly-digest"

# The week: each page block's machine and moment, and the cron ticks between them.
BLOCK, TICK, REFUSED = "block", "tick", "refused"
WEEK = [
    ("monday_init", BLOCK, "laptop", "2026-12-07T10:00:00Z"),  # Monday: init, notify, push
    ("monday_goal", BLOCK, "laptop", "2026-12-07T10:10:00Z"),  # the goal, approved
    ("monday_runner", BLOCK, "runner", "2026-12-07T11:00:00Z"),  # secret, key, doctor, cron
    ("monday_runners", BLOCK, "laptop", "2026-12-07T11:10:00Z"),  # the runner's key listed
    ("night1", TICK, "runner", "2026-12-08T02:00:00Z"),  # Tuesday's night: run 1 parks at ship
    ("tick3", TICK, "runner", "2026-12-08T03:00:00Z"),  # still waiting: nothing told again
    ("tuesday", BLOCK, "laptop", "2026-12-08T09:00:00Z"),  # status, diff
    ("ship1", BLOCK, "laptop", "2026-12-08T09:05:00Z"),  # ship --push origin
    ("shipped1", TICK, "runner", "2026-12-08T10:00:00Z"),  # the runner ships
    ("night2", TICK, "runner", "2026-12-09T02:00:00Z"),  # Wednesday: run 2, parked
    ("wednesday", BLOCK, "laptop", "2026-12-09T09:00:00Z"),  # HARNESS_NOW=… status --json
    ("thursday", BLOCK, "laptop", "2026-12-10T09:00:00Z"),  # Thursday: edit, approve, push
    ("refused", REFUSED, "laptop", "2026-12-10T09:10:00Z"),  # ship before the revision
    ("revised", TICK, "runner", "2026-12-10T10:00:00Z"),  # revised, parked anew
    ("ship2", BLOCK, "laptop", "2026-12-10T10:30:00Z"),  # diff, ship
    ("shipped2", TICK, "runner", "2026-12-10T11:00:00Z"),  # shipped
    ("check", BLOCK, "laptop", "2026-12-10T12:00:00Z"),  # status --check
    ("friday", BLOCK, "laptop", "2026-12-11T09:00:00Z"),  # Friday: ci github --matrix
]


def _blocks() -> list[tuple[str, str]]:
    """Each ```sh block of the page: (the machine its first line names, its text)."""
    found = []
    for text in re.findall(r"```sh\n(.*?)```", GUIDE.read_text(), re.S):
        first = text.splitlines()[0]
        assert first in ("# laptop", "# runner"), f"a block's first line names no machine: {first}"
        found.append((first[2:], text))
    return found


class Week:
    def __init__(self, root: Path, hook: Hook) -> None:
        self.root = root
        self.hook = hook
        self.origin = root / "origin.git"
        self.cron_line = ""

    def env(self, machine: str, now: str) -> dict[str, str]:
        home = self.root / machine
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "XDG_"))}
        return env | {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "PATH": f"{BIN}:{os.environ['PATH']}",
            "HARNESS_NOW": now,
            "HARNESS_SANDBOX": os.environ["HARNESS_SANDBOX"],
        }

    def block(self, machine: str, text: str, now: str, code: int = 0) -> str:
        script = text.replace(ORIGIN_URL, str(self.origin)).replace(WEBHOOK_URL, self.hook.url)
        made = self.root / "runner" / ".config" / "goal-harness" / "runner-key.pub"
        if made.exists():
            script = script.replace(RUNNER_KEY, " ".join(made.read_text().split()[:2]))
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=self.root / machine,
            env=self.env(machine, now),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == code, f"{machine} at {now}:\n{script}\n{proc.stdout}{proc.stderr}"
        if "harness ci cron" in script:
            entries = [line for line in proc.stdout.splitlines() if line.startswith("0 */1 * * * ")]
            assert len(entries) == 1, proc.stdout
            self.cron_line = entries[0].split(" ", 5)[5]
        return proc.stdout + proc.stderr

    def tick(self, now: str) -> str:
        """What cron runs at `now`: the entry's command, in a shell as cron starts it, with
        only HOME, PATH and the clock from the environment."""
        log = self.root / "runner" / "app" / ".git" / "harness" / "cron.log"
        before = log.read_text() if log.exists() else ""
        env = {
            "HOME": str(self.root / "runner"),
            "PATH": "/usr/bin:/bin",
            "HARNESS_NOW": now,
            "HARNESS_SANDBOX": os.environ["HARNESS_SANDBOX"],
            **{k: v for k, v in os.environ.items() if k.startswith("GIT_")},
        }
        proc = subprocess.run(["sh", "-c", self.cron_line], env=env, timeout=300)
        assert proc.returncode == 0, (now, log.read_text())
        return log.read_text()[len(before) :]


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook(200)
    yield server
    server.server.shutdown()


def _live_the_week(tmp_path: Path, hook: Hook) -> tuple[Week, dict[str, str]]:
    """Every block and tick of WEEK, in order: what each printed, by name."""
    blocks = _blocks()
    assert len(blocks) == sum(kind == BLOCK for _, kind, _, _ in WEEK), "the page and WEEK differ"
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(origin), str(seed))
    (seed / "README.md").write_text("the app\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "the app")
    git(seed, "push", "-q", "origin", "HEAD:main")
    for machine in ("laptop", "runner"):
        (tmp_path / machine).mkdir()
    make_key(tmp_path / "laptop" / ".ssh", "id_ed25519")

    week = Week(tmp_path, hook)
    said: dict[str, str] = {}
    pending = iter(blocks)
    for name, kind, machine, now in WEEK:
        if kind == BLOCK:
            page_machine, text = next(pending)
            assert page_machine == machine, (now, text)
            said[name] = week.block(machine, text, now)
        elif kind == REFUSED:
            ship = "cd ~/app && harness ship nightly-digest --key ~/.ssh/id_ed25519 --push origin"
            said[name] = week.block(machine, ship, now, code=3)
        else:
            said[name] = week.tick(now)
    return week, said


@pytest.mark.bare(
    "the page's origin is a URL; here it is a path on this disk, which the sandbox hides from"
    " the ship step (goal-file.md says to name such a path in sandbox_binds)"
)
def test_a_teams_first_week_as_written(tmp_path: Path, hook: Hook) -> None:
    week, said = _live_the_week(tmp_path, hook)
    origin = tmp_path / "origin.git"
    assert "ok: 1 goal(s)" in said["monday_goal"]
    assert "approved goals/nightly-digest.yaml" in said["monday_goal"]
    assert "ok secret:" in said["monday_runner"] and ", 0 fail" in said["monday_runner"]
    assert "ok notify: webhook $TEAM_WEBHOOK_URL; reads TEAM_WEBHOOK_URL" in said["monday_runner"]
    assert "parked_at_eyes gate=ship" in said["night1"] and " started sha256=" in said["night1"]
    assert "nothing to run: nightly-digest waits for a decision" in said["tick3"]
    assert "nightly-digest parked_at_eyes" in said["tuesday"]
    assert (
        "signed .harness/runners (1 runner(s): runner-1) as alice@example.com"
        in (said["monday_runners"])
    )
    assert "(verified by runner runner-1 (SHA256:" in said["tuesday"]
    assert "ok nightly-digest: " in said["tuesday"] and "unverified" not in said["tuesday"]
    assert "; no secret here: MACs not checked)" in said["tuesday"]
    assert "+++ b/digest.md" in said["tuesday"] and "ledger/" not in said["tuesday"]
    assert "pushed main to origin" in said["ship1"]
    assert "decision ship by alice@example.com" in said["shipped1"]
    assert "completed (shipped)" in said["shipped1"]
    digest = git(origin, "show", "digest:digest.md")
    assert "the app" in digest and "nightly digest" in digest
    assert "run 2 started from" in said["night2"] and "(due 2026-12-09T02:00:00." in said["night2"]
    assert "parked_at_eyes gate=ship" in said["night2"]
    row = json.JSONDecoder().raw_decode(said["wednesday"])[0][0]  # then git fetch's stderr
    assert (row["status"], row["run"], row["decision_pending"], row["runnable"]) == (
        "parked_at_eyes",
        2,
        True,
        False,
    )
    assert row["next_run_due"].startswith("2026-12-10T02:00:00.")
    assert "was changed and approved since the gate was reached" in said["refused"]
    assert "revised sha256=" in said["revised"]
    assert "parked_at_eyes gate=ship" in said["revised"]
    assert "completed (shipped)" in said["shipped2"] and "needs you" not in said["check"]
    assert "['nightly-digest']" in said["friday"]  # Friday's night is due and no tick has run it
    workflow = tmp_path / "laptop" / "app" / ".github" / "workflows" / "harness.yml"
    assert "goal-harness@0123456789abcdef0123456789abcdef01234567" in workflow.read_text()

    # The team channel heard each outcome once: two parks, two ships (the revision parks
    # run 2 again at the same gate: nothing new to tell).
    told = [(m["status"], m["gate"], m["run"]) for m in hook.received]
    assert told == [
        ("parked_at_eyes", "ship", 1),
        ("completed", None, 1),
        ("parked_at_eyes", "ship", 2),
        ("completed", None, 2),
    ], hook.received
    first = hook.received[0]
    assert first["next"] == "harness ship nightly-digest --key <owner key>"
    # The runner's record verifies where the secret is.
    runner = week.env("runner", "2026-12-11T10:00:00Z")
    verified = subprocess.run(
        ["harness", "verify"], cwd=tmp_path / "runner" / "app", env=runner, capture_output=True
    )
    assert verified.returncode == 0, verified
