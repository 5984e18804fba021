"""A goal driven through `harness run` with a real agent CLI against the scripted server."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.fakes.server import ModelServer
from tests.managed import JUDGE, ManagedRepo, git

# The judge prints a documentation URL the way pytest does, on the server itself: a tool
# that follows URLs in its prompt would fetch it, and the server would record it.
JUDGE_WITH_URL = JUDGE.replace(
    'print("FAILED', 'print("Docs: " + os.environ["TEST_DOCS_URL"])\nprint("FAILED'
)


@dataclass
class Scenario:
    repo: ManagedRepo
    server: ModelServer
    home: Path

    def run(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return self.repo.harness("run", *args, timeout=timeout)

    @property
    def worktree_file(self) -> Path:
        return self.repo.worktree / "value.txt"

    def events(self) -> list[dict[str, Any]]:
        lines = []
        for segment in sorted((self.repo.ledger_dir / "events").glob("*.jsonl")):
            lines += [json.loads(line)["e"] for line in segment.read_text().splitlines()]
        return lines

    def builds(self) -> list[dict[str, Any]]:
        """The data of every finished build, oldest first."""
        return [
            e["data"]
            for e in self.events()
            if e["type"] == "step.finished" and e["step"] == "build"
        ]

    def used(self) -> dict[str, Any]:
        return dict(self.repo.status()["budget_used"])

    def goal_change(self) -> list[str]:
        """Paths the goal branch changed against main, its own ledger left out."""
        names = git(self.repo.root, "diff", "--name-only", "main", f"harness/{self.repo.goal_id}")
        return [n for n in names.splitlines() if not n.startswith("ledger/")]

    def report(self) -> str:
        return (self.repo.ledger_dir / "report.md").read_text()

    def on_branch(self, path: str) -> str:
        return git(self.repo.root, "show", f"harness/{self.repo.goal_id}:{path}")


def assert_reached_only_through_the_proxy(
    scenario: Scenario, host: str, denied: frozenset[str] = frozenset()
) -> None:
    """A contained build with its template's allowlist: the only way to the scripted server
    was the proxy, by the model API's name (tools.egress_env), and every model call the
    server saw came that way; whatever else the tool asked for (`denied`: its hosts) was
    refused, never reached."""
    [started] = [
        e["data"] for e in scenario.events() if e["type"] == "step.started" and e["step"] == "build"
    ]
    assert started["network"] == "allowlist"
    [build] = scenario.builds()
    egress = build["egress"]
    allowed = [e for e in egress if e["verdict"] == "allowed"]
    assert [(e["host"], e["port"]) for e in allowed] == [(host, scenario.server.port)], egress
    assert allowed[0]["count"] >= 1 and allowed[0]["received"] > 0
    refused = [e for e in egress if e["verdict"] == "denied"]
    assert {e["host"] for e in refused} == denied, egress
    assert all(e["sent"] == e["received"] == 0 for e in refused)
    assert scenario.server.model_calls() and scenario.server.others() == []


def outage(scenario: Scenario, tries: int, message_of: Callable[[str], str]) -> str:
    """Run the goal once per try of an outage (goal halt: `unavailable_tries: <tries>`).

    Every try is a build recorded as `unavailable` with the tool's own message
    (`message_of(output)` reads it from what the tool printed), named in the run's line,
    in `harness status` and in report.md; no judge runs and no iteration is spent. After
    the last try the goal is at needs_attention / agent_unavailable. Returns the message.
    """
    message = ""
    for attempt in range(1, tries + 1):
        if attempt > 1:
            _wait_until(scenario.builds()[-1]["retry_at"])
        run = scenario.run()
        assert run.returncode == 0, run.stderr
        build = scenario.builds()[-1]
        message = message_of(build["output_tail"])
        assert (build.get("result"), build.get("unavailable")) == ("unavailable", message)
        assert (build["unavailable_try"], build["unavailable_tries"]) == (attempt, tries)
        assert scenario.repo.count("judge") == []
        assert scenario.used()["iterations"] == 0
        last = attempt == tries
        when = f"try {attempt} of {tries}" + ("" if last else f", next after {build['retry_at']}")
        shown = f"unavailable ({when}): {message}"
        assert "build[1] unavailable exit=" in run.stdout and f"({when}): {message}\n" in run.stdout
        assert scenario.repo.harness("status", check=0).stdout.endswith(f"{shown}\n")
        assert f"| agent | model API {shown} |" in scenario.report()
    status = scenario.repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "agent_unavailable")
    assert len(scenario.builds()) == tries
    return message


def _wait_until(stamp: str) -> None:
    due = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    time.sleep(max(0.0, due - time.time()) + 0.05)


# A real pytest run in the build, as agents run one (issue 27): a tiny passing test, in a
# repository with no .gitignore, so nothing but pytest's own `.pytest_cache/.gitignore`
# (`*`) hides what it writes. Bytecode off: without an ignore rule it would be committed.
TINY_TEST = {"test_tiny.py": "def test_tiny():\n    assert 1 + 1 == 2\n"}
RUN_PYTEST = f"PYTHONDONTWRITEBYTECODE=1 {sys.executable} -m pytest -q test_tiny.py"


def without_gitignore(scenario: Scenario) -> Scenario:
    """The scenario's repository with its .gitignore removed in a commit of its own (the
    harness keeps its worktrees out of the main checkout through info/exclude)."""
    git(scenario.repo.root, "rm", "-q", ".gitignore")
    git(scenario.repo.root, "commit", "-q", "-m", "no .gitignore")
    return scenario


def assert_pytest_cache_allowed(scenario: Scenario) -> None:
    """The build ran pytest (its cache is there, ignored by its own rule) and the goal
    completed: the cache is no hidden file of the build's (docs/specs/trust.md)."""
    cache = scenario.repo.worktree / ".pytest_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "v" / "cache" / "nodeids").is_file()
    [build] = scenario.builds()
    assert "result" not in build, build  # a build's result is only ever a stop
    assert scenario.repo.status()["status"] == "completed"
    assert scenario.goal_change() == ["value.txt"]


def realistic_key(prefix: str) -> str:
    """A key as long as a provider's (the suite's own dummy keys are short, and a value under
    8 characters is never redacted, by design): `prefix` and 40 characters."""
    return prefix + hashlib.sha256(prefix.encode()).hexdigest()[:40]


def assert_key_only_as_receipt(
    scenario: Scenario, run: subprocess.CompletedProcess[str], name: str, key: str
) -> None:
    """The key the build printed is in no event of the goal's ledger on its branch, in no
    commit of any ref (`git log -p --all`, `git grep` of every ref) and not in what
    `harness run` printed; the ledger holds its receipt instead (docs/specs/trust.md,
    "Redaction")."""
    root, branch = scenario.repo.root, f"harness/{scenario.repo.goal_id}"
    folder = f"{branch}:ledger/{scenario.repo.goal_id}/events"
    segments = git(root, "ls-tree", "--name-only", folder).split()
    ledger = "".join(git(root, "show", f"{folder}/{segment}") for segment in segments)
    assert key not in ledger
    assert key not in git(root, "log", "-p", "--all")
    refs = git(root, "for-each-ref", "--format=%(refname)").split()
    found = subprocess.run(["git", "grep", "-F", key, *refs], cwd=root, capture_output=True)
    assert (found.returncode, found.stdout) == (1, b"")  # 1: no match, and no error
    assert key not in run.stdout + run.stderr
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    assert f"[redacted:{name} sha256:{digest}]" in ledger  # the build did print it
