"""No secret is ever committed (issue 28): what steps print is redacted before the record.

Each row is a goal whose steps leak a secret the runner holds (an agent's key, a deploy
token) or a token of a well-known shape, in one of the ways agents and tests do. After the
real CLI ran it to its end, the secret must be in no committed byte of any ref (`git grep`
over every ref, `git log -p --all`), in nothing `run`, `status`, `report` or `replay` printed,
and in no notification body; and the record must hold the secret's receipt instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal, git

API_KEY = "sk-ant-api03-Zq8wX4vT1mN6pR2sK9dL5hJ3gF7bC0aY"
DEPLOY = "dpl-4b9e2c7a1f8d6e3b5a0c9f7e2d4b6a81"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
SECRETS = {"ANTHROPIC_API_KEY": API_KEY, "DEPLOY_TOKEN": DEPLOY}


def _receipt(name: str, value: str) -> str:
    return f"[redacted:{name} sha256:{hashlib.sha256(value.encode()).hexdigest()[:12]}]"


# How the build leaks (Python in the worktree, before it writes value.txt).
LEAKS = {
    "echoed-api-key": ("print('key=' + os.environ['ANTHROPIC_API_KEY'])", API_KEY),
    "printed-env": ("print('\\n'.join(f'{k}={v}' for k, v in os.environ.items()))", DEPLOY),
    "split-over-two-chunks": (
        "t = os.environ['DEPLOY_TOKEN']\n"
        "sys.stdout.write(t[:15]); sys.stdout.flush(); time.sleep(0.3)\n"
        "sys.stdout.write(t[15:] + '\\n'); sys.stdout.flush()",
        DEPLOY,
    ),
    "base64-token": (
        "print(base64.b64encode(('deploy:' + os.environ['DEPLOY_TOKEN']).encode()).decode())",
        base64.b64encode(("deploy:" + DEPLOY).encode()).decode()[12:40],  # the token's part
    ),
    # Made at run time: the build's own source (committed) must not hold the block.
    "private-key-block": (f"print({PEM[::-1]!r}[::-1])", PEM.splitlines()[1]),
}

JUNIT_JUDGE = r"""
import os, sys
from pathlib import Path
Path("reports").mkdir(exist_ok=True)
ok = Path("value.txt").exists() and Path("value.txt").read_text().strip() == "right"
token = os.environ["DEPLOY_TOKEN"]
failure = "" if ok else f'<failure message="login failed with {token}">token {token}</failure>'
Path("reports/junit.xml").write_text(
    '<testsuite name="t" tests="1" failures="%d"><testcase classname="tests.test_login" '
    'name="test_login">%s</testcase></testsuite>' % (0 if ok else 1, failure)
)
print("FAILED tests/test_login.py::test_login - " + token if not ok else "1 passed")
sys.exit(0 if ok else 1)
"""


def _repo(tmp_path: Path, key: OwnerKey, leak: str, **goal_parts: object) -> ManagedRepo:
    build = (
        "import base64, os, pathlib, sys, time\n"
        f"{leak}\n"
        "right = int(os.environ['HARNESS_ITERATION']) >= 2 or not pathlib.Path('fix-on-2').exists()\n"
        "pathlib.Path('value.txt').write_text('right\\n' if right else 'wrong\\n')\n"
    )
    goal = base_goal() | goal_parts
    goal["build"] = {"run": [sys.executable, "build.py"], "timeout": "60s"}
    notify = "notify:\n  command: [sh, -c, 'cat >> \"$TEST_COUNTER_DIR/notify.log\"']\n"
    files = {"build.py": build, ".harness/config.yaml": "sandbox: off\n" + notify}
    repo = ManagedRepo.create(tmp_path / "repo", key, goal=goal, files=files)
    repo.env |= SECRETS
    return repo


def _printed(repo: ManagedRepo, *args: str) -> str:
    proc = repo.harness(*args)
    return proc.stdout + proc.stderr


def _everything_committed(repo: ManagedRepo) -> str:
    refs = git(repo.root, "for-each-ref", "--format=%(refname)").split()
    grep = subprocess.run(
        ["git", "grep", "-I", "-h", "-e", ".", *refs], cwd=repo.root, capture_output=True, text=True
    ).stdout
    return grep + git(repo.root, "log", "-p", "--all", "--text")


def _assert_nowhere(repo: ManagedRepo, value: str, outputs: list[str]) -> None:
    assert value not in _everything_committed(repo)
    for text in outputs:
        assert value not in text, text
    notified = repo.counters / "notify.log"
    assert notified.exists()  # the goal reached a state the owners are told of
    assert value not in notified.read_text()


@pytest.mark.parametrize("row", sorted(LEAKS))
def test_a_leaked_secret_is_in_no_record_and_no_line(
    tmp_path: Path, owner_key: OwnerKey, row: str
) -> None:
    leak, value = LEAKS[row]
    repo = _repo(tmp_path, owner_key, leak, budget={"max_iterations": 1})
    outputs = [_printed(repo, "run")]
    outputs += [_printed(repo, *args) for args in (["status"], ["report", "g1"], ["replay", "g1"])]
    assert repo.status()["status"] == "completed", outputs[0]
    _assert_nowhere(repo, value, outputs)
    if row != "private-key-block":  # a shape has no name: its receipt names its kind
        name, secret = (
            ("ANTHROPIC_API_KEY", API_KEY) if value == API_KEY else ("DEPLOY_TOKEN", DEPLOY)
        )
        assert _receipt(name, secret) in _everything_committed(repo)


def test_a_token_in_a_junit_failure_message_is_redacted(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    judge = {
        "run": [sys.executable, "-c", JUNIT_JUDGE],
        "junit": "reports/junit.xml",
        "timeout": "60s",
    }
    repo = _repo(tmp_path, owner_key, "pathlib.Path('fix-on-2').touch()", judge=judge)
    outputs = [_printed(repo, "run"), _printed(repo, "replay", "g1")]
    assert repo.status()["status"] == "completed", outputs[0]
    _assert_nowhere(repo, DEPLOY, outputs)
    events = [
        json.loads(line)["e"] for line in (repo.ledger_dir / "events" / "000001.jsonl").open()
    ]
    judged = json.dumps([e["data"] for e in events if e.get("step") == "judge"])
    assert _receipt("DEPLOY_TOKEN", DEPLOY) in judged


def test_a_token_in_the_ship_steps_output_is_redacted(tmp_path: Path, owner_key: OwnerKey) -> None:
    ship = {"run": ["sh", "-c", 'echo "pushing with $DEPLOY_TOKEN"; exit 1'], "timeout": "60s"}
    repo = _repo(tmp_path, owner_key, "pass", ship=ship)
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    outputs = [_printed(repo, "ship", "g1", "--key", str(repo.key.private))]
    assert repo.status()["gate"] == "ship_failed", outputs[0]
    outputs += [_printed(repo, "status"), _printed(repo, "report", "g1")]
    _assert_nowhere(repo, DEPLOY, outputs)
    assert _receipt("DEPLOY_TOKEN", DEPLOY) in outputs[0]


def test_verify_secrets_finds_a_leak_in_a_record_written_before_redaction(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    """A record made while the runner did not hold the token (as an older harness, which
    redacted nothing, recorded every value): `verify --secrets` with the token held names
    the event and the receipt, never the value, and exits 3; plain `verify` still passes."""
    repo = _repo(tmp_path, owner_key, LEAKS["printed-env"][0], budget={"max_iterations": 1})
    held = dict(repo.env)
    repo.env.pop("DEPLOY_TOKEN")
    repo.env["OLD_DEPLOY"] = DEPLOY  # a name the redactor does not know
    repo.harness("run", check=0)
    assert DEPLOY in _everything_committed(repo)  # planted: the record holds it
    repo.harness("verify", "g1", check=0)
    found = repo.harness("verify", "--secrets", "g1", env=held, check=3)
    assert DEPLOY not in found.stdout + found.stderr
    assert re.search(
        r"000001\.jsonl:\d+ \(event \d+\) " + re.escape(_receipt("DEPLOY_TOKEN", DEPLOY)),
        found.stdout,
    )
    assert "rotate each leaked secret" in found.stdout
    doctor = repo.harness("doctor", env=held, check=3)
    assert "secrets: 1 secret(s) in the record: g1: 000001.jsonl:" in doctor.stdout
    assert DEPLOY not in doctor.stdout + doctor.stderr
    # A runner that does not hold the value cannot name it (only token shapes are known).
    named = repo.harness("verify", "--secrets", "g1", env=repo.env, check=0)
    assert named.stdout.startswith("ok g1")


def test_the_committed_example_holds_no_secret() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_SECRET_FILE",)}
    env["HARNESS_SECRET"] = "goal-harness-demo-secret-do-not-use-for-real-work"
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "verify", "--secrets"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_secret_written_into_a_file_of_the_tree_is_never_committed(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    leak = (
        "pathlib.Path('config').mkdir(exist_ok=True)\n"
        "pathlib.Path('config/deploy.env').write_text('REGION=eu\\nTOKEN=' + os.environ['DEPLOY_TOKEN'] + '\\n')"
    )
    repo = _repo(tmp_path, owner_key, leak)
    outputs = [_printed(repo, "run")]
    cell = repo.status()
    assert (cell["status"], cell["gate"]) == ("parked_at_eyes", "secret_in_change"), outputs[0]
    detail = json.loads((repo.ledger_dir / "state.json").read_text())["gate_detail"]
    assert f"config/deploy.env:2 {_receipt('DEPLOY_TOKEN', DEPLOY)}" in detail
    assert not (repo.worktree / "config" / "deploy.env").exists()  # held back
    outputs += [_printed(repo, "status"), _printed(repo, "report", "g1")]
    _assert_nowhere(repo, DEPLOY, outputs)
    held = repo.root / ".git" / "harness" / "quarantine" / "g1" / "config" / "deploy.env"
    assert DEPLOY in held.read_text()
    # The owner lets the file in (a fixture's key, say): it is committed as it is, and what
    # the held file's change is (a config/*.env file) parks it as any change would.
    repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    assert repo.status()["gate"] == "destructive:secret_rotation"
    while repo.status()["status"] == "parked_at_eyes":
        repo.harness("unpark", "g1", "--key", str(repo.key.private), check=0)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"
    branch = git(repo.root, "show", "harness/g1:config/deploy.env")
    assert DEPLOY in branch
    assert not held.exists()
