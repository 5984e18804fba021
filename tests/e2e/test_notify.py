"""Notifications (issue 15): a real HTTP server on 127.0.0.1 and a real command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.managed import SECRET, ManagedFactory, base_goal

SHIP = {"run": ["sh", "-c", 'echo shipped >> "$TEST_COUNTER_DIR/ship.log"']}


class Hook:
    def __init__(self, answer: int) -> None:
        self.answer = answer
        self.received: list[dict[str, object]] = []
        self.paths: list[str] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                assert self.headers["Content-Type"] == "application/json"
                hook.received.append(json.loads(self.rfile.read(length)))
                hook.paths.append(self.path)
                self.send_response(hook.answer)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook(200)
    yield server
    server.server.shutdown()


def test_one_notification_per_transition(
    managed: ManagedFactory, hook: Hook, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    script = f"import sys, os; open({str(seen)!r}, 'a').write(sys.stdin.read() + ' ' + str('HARNESS_SECRET' in os.environ) + '\\n')"
    config = {"notify": {"webhook": "$HOOK_URL", "command": [sys.executable, "-c", script]}}
    repo = managed(
        goal=base_goal() | {"ship": SHIP},
        mode="fix-on-1",
        files={".harness/config.yaml": json.dumps(config)},
    )
    repo.env["HOOK_URL"] = hook.url
    repo.harness("run", check=0)
    assert [(d["status"], d["gate"]) for d in hook.received] == [("parked_at_eyes", "ship")]
    told = hook.received[0]
    detail = str(told["gate_detail"])
    assert re.fullmatch(
        r"commit [0-9a-f]{40} passed the done gate; ship needs a signed decision", detail
    )
    assert told["text"] == (
        f"goal-harness: g1 is parked_at_eyes at gate ship ({repo.root.name}): {detail}; "
        "next: harness ship g1 --key <owner key>"
    )
    assert (told["run"], told["reason"], told["next"]) == (
        None,
        "ship",
        "harness ship g1 --key <owner key>",
    )
    repo.harness("run", check=0)  # still parked: nothing new to tell
    # With --push, the goal branch in step with the remote's as fetched (the resting
    # shortcut, remote.md): still nothing new.
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.root), str(bare)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(bare)], cwd=repo.root, check=True)
    repo.harness("run", "--push", "origin", check=0)
    repo.harness("run", "g1", "--push", "origin", check=0)
    assert len(hook.received) == 1
    repo.harness("ship", "g1", "--key", str(repo.key.private), check=0)  # ships at once
    assert [d["status"] for d in hook.received] == ["parked_at_eyes", "completed"]
    assert hook.received[1]["previous"] == "parked_at_eyes"
    repo.harness("run", check=0)
    assert len(hook.received) == 2
    lines = seen.read_text().splitlines()
    assert [json.loads(line.rsplit(" ", 1)[0])["status"] for line in lines] == [
        "parked_at_eyes",
        "completed",
    ]
    assert all(line.endswith(" False") for line in lines)  # the command never gets the secret
    assert SECRET not in seen.read_text()


def test_a_failing_webhook_does_not_fail_the_run(managed: ManagedFactory) -> None:
    failing = Hook(500)
    try:
        config = {"notify": {"webhook": failing.url, "timeout": "5s"}}
        repo = managed(mode="fix-on-1", files={".harness/config.yaml": json.dumps(config)})
        proc = repo.harness("run", check=0)
        assert repo.status()["status"] == "completed"
        assert len(failing.received) == 1  # tried once, not retried
        expected = (
            "harness: g1: notify failed for g1 (completed): webhook: the server answered HTTP 500"
        )
        assert expected in proc.stderr.splitlines()
        assert failing.url not in proc.stderr
        log = (repo.root / ".git" / "harness" / "notify.log").read_text()
        assert "notify failed for g1 (completed): webhook: the server answered HTTP 500" in log
        repo.harness("run", check=0)
        assert len(failing.received) == 1
    finally:
        failing.server.shutdown()


def test_an_unreachable_webhook_and_a_failing_command_are_recorded(
    managed: ManagedFactory,
) -> None:
    config = {"notify": {"webhook": "http://127.0.0.1:9/hook", "command": "false", "timeout": 3}}
    repo = managed(mode="fix-on-1", files={".harness/config.yaml": json.dumps(config)})
    proc = repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    assert "notify failed for g1 (completed): webhook: URLError:" in proc.stderr
    assert "notify failed for g1 (completed): command false: exited 1" in proc.stderr


def test_a_bad_notify_setting_is_one_line(managed: ManagedFactory) -> None:
    config = {"notify": {"webhook": "ftp://example.com/x"}}
    repo = managed(files={".harness/config.yaml": json.dumps(config)}, approve=False)
    proc = repo.harness("run", check=2)
    assert proc.stderr.strip().endswith(
        ".harness/config.yaml: notify.webhook: 'ftp://example.com/x' is not a webhook URL "
        "(expected an http:// or https:// URL, or $NAME)"
    )


def test_no_step_sees_the_notifier_variables_and_the_command_does(
    managed: ManagedFactory, hook: Hook, tmp_path: Path
) -> None:
    """The webhook's $NAME and `notify.env` names are the notifier's: the build (an agent
    that could post as the harness with them) never gets them; the notify command does."""
    seen = tmp_path / "token.txt"
    script = f"import os; open({str(seen)!r}, 'w').write(os.environ.get('PAGER_TOKEN', '-'))"
    notify = {"webhook": "$HOOK_URL", "command": [sys.executable, "-c", script]}
    config = {"notify": notify | {"env": ["PAGER_TOKEN"]}}
    repo = managed(mode="env-dump", files={".harness/config.yaml": json.dumps(config)})
    repo.env |= {"HOOK_URL": hook.url, "PAGER_TOKEN": "pager-token-value-0123456789"}
    repo.harness("run", check=0)
    agent_env = json.loads((repo.counters / "env.json").read_text())
    assert "HOOK_URL" not in agent_env and "PAGER_TOKEN" not in agent_env
    assert "TEST_COUNTER_DIR" in agent_env  # the dump is of the agent's real environment
    assert seen.read_text() == "pager-token-value-0123456789"
    assert [d["status"] for d in hook.received] == ["completed"]


@pytest.mark.parametrize(
    ("notify", "message"),
    [
        (
            {"webhook": "$HOOK", "env": ["PAGER-TOKEN"]},
            "notify.env[0]: 'PAGER-TOKEN' is not an environment variable name "
            "(expected letters, digits and '_', not starting with a digit)",
        ),
        (
            {"webhook": "$HOOK", "env": "PAGER_TOKEN"},
            "notify.env: got a string 'PAGER_TOKEN' "
            "(expected a list of environment variable names the notify command reads (a token))",
        ),
    ],
)
def test_a_bad_notify_variable_is_one_line(
    managed: ManagedFactory, notify: dict[str, object], message: str
) -> None:
    config = {"notify": notify}
    repo = managed(files={".harness/config.yaml": json.dumps(config)}, approve=False)
    proc = repo.harness("run", check=2)
    assert proc.stderr.strip().endswith(f".harness/config.yaml: {message}")
    assert "Traceback" not in proc.stderr
