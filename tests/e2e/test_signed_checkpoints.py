"""Signed checkpoints (issue 31): a clone without the secret verifies a runner's record.

A runner with its own key, listed by the owners in a signed `.harness/runners`, signs every
checkpoint it commits. In a clone without the secret, `verify`, `status`, `replay`,
`report` and `diff` then say which runner's signature they checked, and refuse (exit 3) a
forged cell, a forged ledger line, a head signed by an unlisted key, and code pushed over
the runner's commit. `ssh-keygen -Y verify` checks the same signature."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.position import Position
from harness.trust.checkpoint import signed_checkpoint
from harness.trust.runnerkey import load_runner_key
from tests.managed import (
    ManagedFactory,
    ManagedRepo,
    base_goal,
    git,
    harness_in,
    reviewer_clone,
)

SHIP = {"run": ["sh", "-c", "echo shipped"]}
READERS = (
    ("verify",),
    ("status",),
    ("replay", "g1"),
    ("diff", "g1"),
    ("report", "g1", "--out", "{site}"),
)


def list_runner(repo: ManagedRepo, name: str, key_file: Path) -> str:
    """Make a runner key at `key_file`, list it in `.harness/runners` as `name`, sign that
    as the owner and commit both; returns the key's public line."""
    env = repo.env | {"HARNESS_RUNNER_KEY_FILE": str(key_file)}
    made = repo.harness("runner-key", "new", env=env, check=0).stdout
    public = made.splitlines()[-1].split(" ", 1)[1]
    runners = repo.root / ".harness" / "runners"
    with runners.open("a") as handle:
        handle.write(f"{name} {public}\n")
    signed = repo.harness("runners", "sign", "--key", str(repo.key.private), check=0)
    assert "signed .harness/runners (" in signed.stdout and "as owner@" in signed.stdout
    git(repo.root, "add", ".harness")
    git(repo.root, "commit", "-qm", f"list runner {name}")
    return public


def signed_runner(managed: ManagedFactory, tmp_path: Path) -> ManagedRepo:
    """A runner whose key the owners list, with a goal parked at its ship gate."""
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    key_file = tmp_path / "runner-config" / "runner-key"
    list_runner(runner, "runner-1", key_file)
    runner.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    runner.harness("run", check=0)
    assert runner.status()["status"] == "parked_at_eyes"
    return runner


def readers(clone: Path, env: dict[str, str], site: Path) -> list[subprocess.CompletedProcess[str]]:
    return [harness_in(clone, env, *(arg.format(site=site) for arg in args)) for args in READERS]


def on_goal_branch(clone: Path) -> None:
    git(clone, "branch", "-q", "harness/g1", "origin/harness/g1")
    git(clone, "checkout", "-q", "harness/g1")


def commit(clone: Path, message: str) -> None:
    git(clone, "commit", "-qam", message)
    git(clone, "checkout", "-q", "main")


def test_a_clone_without_the_secret_verifies_an_honest_record_by_its_runner(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = signed_runner(managed, tmp_path)
    clone, env = reviewer_clone(runner, tmp_path)
    verify, status, replay, diff, report = readers(clone, env, tmp_path / "site")
    for proc in (verify, status, replay, diff, report):
        assert proc.returncode == 0, (proc.args, proc.stdout, proc.stderr)
    key = load_runner_key(runner.env)
    assert key is not None
    said = f"verified by runner runner-1 ({key.fingerprint})"
    assert verify.stdout.startswith("ok g1: ") and f"({said}; no secret here" in verify.stdout
    assert f"({said}; no secret here: MACs not checked)" in status.stdout
    assert f"harness: g1: {said} at event " in replay.stderr
    assert "parked_at_eyes gate=ship" in replay.stdout and "+++ b/" in diff.stdout
    page = (tmp_path / "site" / "g1.html").read_text()
    assert 'class="verify unverified"' not in page and said in page
    row = json.loads(harness_in(clone, env, "verify", "--json").stdout)["goals"][0]
    assert row["runner"]["principals"] == ["runner-1"]
    assert row["runner"]["fingerprint"] == key.fingerprint
    assert json.loads(harness_in(clone, env, "status", "--json").stdout)[0]["signed_by"] == said


def test_ssh_keygen_verifies_a_checkpoint_with_the_documented_message(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = signed_runner(managed, tmp_path)
    text = (runner.worktree / "ledger" / "g1" / "checkpoint.sig").read_text()
    statement, _, armor = text.partition("-----BEGIN SSH SIGNATURE-----")
    cell = (runner.worktree / "ledger" / "g1" / "state.json").read_bytes()
    row = json.loads(cell)
    assert statement == (
        "goal-harness-checkpoint v1\ngoal g1\n"
        f"ledger {row['position']['seq']}:{row['position']['hash']}\n"
        f"cell {hashlib.sha256(cell).hexdigest()}\ntree {row['tree']}\n"
    )
    signature = tmp_path / "checkpoint.sig"
    signature.write_text("-----BEGIN SSH SIGNATURE-----" + armor)
    argv = ["ssh-keygen", "-Y", "verify", "-f", str(runner.root / ".harness" / "runners")]
    argv += ["-I", "runner-1", "-n", "goal-harness-checkpoint", "-s", str(signature)]
    proc = subprocess.run(argv, input=statement.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    forged = subprocess.run(argv, input=statement.replace("goal g1", "goal g2").encode())
    assert forged.returncode != 0


def _edit_cell(clone: Path, tmp_path: Path | None = None) -> None:
    cell = clone / "ledger" / "g1" / "state.json"
    data = cell.read_bytes()
    assert b'"status":"parked_at_eyes"' in data
    cell.write_bytes(data.replace(b'"status":"parked_at_eyes"', b'"status":"completed"'))


def _edit_last_line(clone: Path, tmp_path: Path) -> None:
    """Rewrite the last event's text and the cell's position with it: a chain that holds,
    forged by someone without the secret."""
    segment = sorted((clone / "ledger" / "g1" / "events").glob("*.jsonl"))[-1]
    lines = segment.read_bytes().splitlines(keepends=True)
    line = json.loads(lines[-1])
    line["e"]["data"]["detail"] = "shipped already; nothing to review"
    lines[-1] = json.dumps(line, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    segment.write_bytes(b"".join(lines))
    cell = clone / "ledger" / "g1" / "state.json"
    row = json.loads(cell.read_bytes())
    old = row["position"]["hash"].encode()
    new = hashlib.sha256(lines[-1]).hexdigest().encode()
    cell.write_bytes(cell.read_bytes().replace(old, new))


def _sign_with_own_key(clone: Path, tmp_path: Path) -> None:
    """A committer's own key (not listed) signs a forged cell."""
    own = tmp_path / "mallory" / "key"
    made = subprocess.run(
        [sys.executable, "-m", "harness", "runner-key", "new", "--file", str(own)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    _edit_cell(clone)
    cell = (clone / "ledger" / "g1" / "state.json").read_bytes()
    row = json.loads(cell)
    key = load_runner_key({"HARNESS_RUNNER_KEY_FILE": str(own)})
    assert key is not None
    head = Position(row["position"]["seq"], row["position"]["hash"])
    signed = signed_checkpoint(key, "g1", head, cell, row["tree"])
    (clone / "ledger" / "g1" / "checkpoint.sig").write_bytes(signed)


def _push_code_over(clone: Path, tmp_path: Path) -> None:
    (clone / "agent.py").write_text("print('not what the runner built')\n")


FORGERIES = {
    "cell": (_edit_cell, "not the cell runner runner-1 signed"),
    "ledger-line": (_edit_last_line, "not the cell runner runner-1 signed"),
    "unlisted-key": (_sign_with_own_key, "signed by a key that is not in .harness/runners"),
    "code": (_push_code_over, "signed with the record"),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_clone_without_the_secret_refuses_a_forgery(
    managed: ManagedFactory, tmp_path: Path, forgery: str
) -> None:
    runner = signed_runner(managed, tmp_path)
    clone, env = reviewer_clone(runner, tmp_path)
    forge, message = FORGERIES[forgery]
    on_goal_branch(clone)
    forge(clone, tmp_path)
    commit(clone, f"forged {forgery}, by someone without a runner key")
    refused = readers(clone, env, tmp_path / "site")
    # The code pushed over the record leaves the record itself as the runner signed it:
    # only the commands that look at the branch's tree (verify, diff) read the code.
    looked = refused if forgery != "code" else [refused[0], refused[3]]
    for proc in looked:
        assert proc.returncode == 3, (proc.args, proc.stdout, proc.stderr)
        assert message in proc.stdout + proc.stderr, (proc.args, proc.stdout, proc.stderr)


def test_a_runners_file_no_owner_signed_is_trusted_nowhere(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = signed_runner(managed, tmp_path)
    clone, env = reviewer_clone(runner, tmp_path)
    with (clone / ".harness" / "runners").open("a") as handle:
        handle.write(
            "mallory ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9ZcHh0kQ6nqlqS0tPn6q1QJ1mH7xX5c8K0q9Q8lq8R\n"
        )
    git(clone, "commit", "-qam", "a runner listed by someone who is not an owner")
    for proc in readers(clone, env, tmp_path / "site"):
        assert proc.returncode == 3, (proc.args, proc.stdout, proc.stderr)
        assert ".harness/runners: not signed by an owner" in proc.stdout + proc.stderr


def test_a_machine_the_owners_do_not_list_writes_no_record(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed()
    list_runner(runner, "runner-1", tmp_path / "listed" / "runner-key")
    before = runner.snapshot()
    refs = git(runner.root, "for-each-ref")
    unlisted = tmp_path / "other" / "runner-key"
    other = runner.env | {"HARNESS_RUNNER_KEY_FILE": str(unlisted)}
    runner.harness("runner-key", "new", env=other, check=0)
    cases = {
        "unlisted": (other, "this runner's key (SHA256:"),
        "no key": (runner.env, "this machine has no runner key"),
    }
    for name, (env, message) in cases.items():
        proc = runner.harness("run", env=env)
        assert proc.returncode == 3, (name, proc.stdout, proc.stderr)
        assert message in proc.stderr and "harness runners sign" in proc.stderr, name
        assert runner.snapshot() == before and git(runner.root, "for-each-ref") == refs


def test_a_resting_head_written_without_a_runner_key_is_signed_at_the_next_run(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """A record made before the owners listed runners carries no signature: a clone without
    the secret refuses it until a listed runner signs its head, which the runner's next
    pass does for a goal at rest (a parked goal moves no further by itself), once."""
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    runner.harness("run", check=0)
    assert runner.status()["status"] == "parked_at_eyes"
    assert not (runner.worktree / "ledger" / "g1" / "checkpoint.sig").exists()
    key_file = tmp_path / "runner-config" / "runner-key"
    list_runner(runner, "runner-1", key_file)
    clone, env = reviewer_clone(runner, tmp_path)
    proc = harness_in(clone, env, "verify", "g1")
    assert proc.returncode == 3, proc
    assert "ledger/g1/checkpoint.sig: missing: the record's head is not signed" in proc.stdout
    runner.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    head = git(runner.root, "rev-parse", "harness/g1")
    assert runner.harness("run", check=0).stdout == ""
    signed = git(runner.root, "log", "-1", "--format=%s", "harness/g1")
    assert git(runner.root, "rev-parse", "harness/g1^") == head
    assert signed == "harness(g1): signed by this runner"
    assert runner.status()["status"] == "parked_at_eyes"
    runner.harness("run", check=0)
    assert git(runner.root, "rev-parse", "harness/g1^") == head  # once, not at every pass
    git(clone, "fetch", "-q")
    assert harness_in(clone, env, "verify", "g1").returncode == 0
    # Another listed runner leaves a head a listed runner signed as it is (no ping-pong).
    second = tmp_path / "second" / "runner-key"
    list_runner(runner, "runner-2", second)
    runner.harness("run", env=runner.env | {"HARNESS_RUNNER_KEY_FILE": str(second)}, check=0)
    assert git(runner.root, "rev-parse", "harness/g1^") == head


def test_doctor_and_check_say_where_the_runners_stand(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    runner = managed()
    unlisted = runner.harness("doctor")
    assert "warn runners: none listed (.harness/runners is not on refs/heads/main)" in (
        unlisted.stdout
    )
    key_file = tmp_path / "runner-config" / "runner-key"
    list_runner(runner, "runner-1", key_file)
    assert runner.harness("check", check=0).stdout.startswith("ok: 1 goal(s)")
    missing = runner.harness("doctor")
    assert missing.returncode == 3, missing
    assert (
        "fail runner-key: none at " in missing.stdout and "`harness run` refuses" in missing.stdout
    )
    runner.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    listed = runner.harness("doctor").stdout
    assert "ok runners: 1 listed, signed by an owner: runner-1" in listed
    assert "signs checkpoints, listed as runner-1" in listed
    with (runner.root / ".harness" / "runners").open("a") as handle:
        handle.write(f"runner-2 {runner.key.public}\n")
    edited = runner.harness("check")
    assert edited.returncode == 3, edited
    assert ".harness/runners: not signed by an owner: no owner has signed its bytes" in (
        edited.stdout
    )


@pytest.mark.parametrize("point", ["after_cell_write@2", "before_commit@3", "after_commit@4"])
def test_a_runner_killed_at_a_checkpoint_leaves_a_head_it_signed_once_resumed(
    managed: ManagedFactory, tmp_path: Path, point: str
) -> None:
    runner = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    key_file = tmp_path / "runner-config" / "runner-key"
    list_runner(runner, "runner-1", key_file)
    runner.env["HARNESS_RUNNER_KEY_FILE"] = str(key_file)
    killed = runner.harness("run", env=runner.env | {"HARNESS_FAILPOINT": point})
    assert killed.returncode == -9, (killed.stdout, killed.stderr)
    runner.harness("run", check=0)
    assert runner.status()["status"] == "parked_at_eyes"
    clone, env = reviewer_clone(runner, tmp_path)
    verified = harness_in(clone, env, "verify", "g1")
    assert verified.returncode == 0 and "verified by runner runner-1" in verified.stdout, verified
