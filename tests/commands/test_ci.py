"""`harness ci`: the GitHub workflow (checked against GitHub's own schema and run as bash),
the cron line (run as cron would) and the systemd units (parsed, and verified by systemd)."""

from __future__ import annotations

import configparser
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import check_jsonschema  # type: ignore[import-untyped]
import jsonschema  # type: ignore[import-untyped]
import pytest

# Neither ships type information; harness/model/yamlutil.py skips jsonschema the same way.
from harness.cli import cli
from harness.commands.ci import SERVICE_NAME, TIMER_NAME, ci_cron, ci_systemd, schedule, when
from harness.commands.ci_github import WORKFLOW_PATH, ci_github
from harness.errors import InvalidInput
from harness.model.yamlutil import load_yaml
from tests.managed import SECRET, ManagedFactory, ManagedRepo, base_goal, git
from tests.tools import need_tool
from tests.workflows import PINNED

WORKFLOW_SCHEMA = (
    Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "github-workflows.json"
)
BIN = str(Path(sys.executable).parent)
CRON_FIELD = re.compile(r"^(\*|\d+)(/\d+)?$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _workflow(root: Path) -> dict[str, Any]:
    data = load_yaml((root / WORKFLOW_PATH).read_bytes(), WORKFLOW_PATH)
    assert isinstance(data, dict)
    return data


def _schema() -> dict[str, Any]:
    import json

    schema: dict[str, Any] = json.loads(WORKFLOW_SCHEMA.read_text())
    return schema


def _validate(workflow: dict[str, Any]) -> None:
    schema = _schema()
    jsonschema.validators.validator_for(schema)(schema).validate(workflow)


def _step(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    steps = workflow["jobs"]["run"]["steps"]
    return next(s for s in steps if s.get("name") == name)


def _step_env(
    step: dict[str, Any], base: dict[str, str], runner_temp: Path, secret: str = SECRET
) -> dict[str, str]:
    """The step's environment as GitHub gives it: the job's, its `env:` with expressions
    evaluated, and RUNNER_TEMP; the secret reaches only the steps that name it."""
    env = {k: v for k, v in base.items() if k not in ("HARNESS_SECRET", "HARNESS_SECRET_FILE")}
    env["RUNNER_TEMP"] = str(runner_temp)
    for name, value in step.get("env", {}).items():
        value = value.replace("${{ secrets.HARNESS_SECRET }}", secret)
        env[name] = value.replace("${{ runner.temp }}", str(runner_temp))
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # How GitHub runs `shell: bash` steps.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- GitHub Actions ---------------------------------------------------------------------


def test_workflow_validates_against_githubs_schema(repo: Path) -> None:
    out = io.StringIO()
    assert ci_github(repo, out, force=False, install=PINNED) == 0
    assert f"wrote {WORKFLOW_PATH}" in out.getvalue()
    _validate(_workflow(repo))


def test_workflow_installs_the_spec_given(repo: Path) -> None:
    spec = f"{PINNED}#egg=goal-harness"
    ci_github(repo, io.StringIO(), force=False, install=spec)
    wf = _workflow(repo)
    _validate(wf)
    assert _step(wf, "Install goal-harness")["run"] == f'python -m pip install "{spec}"'


@pytest.mark.parametrize(
    "spec",
    ["goal-harness; rm -rf /", 'x"y', "$(id)", "a b", "", f'{PINNED}"x', f"{PINNED} $(id)"],
)
def test_an_install_spec_that_could_escape_is_refused(repo: Path, spec: str) -> None:
    with pytest.raises(InvalidInput, match=r"^--install: .* is not a pinned install spec"):
        ci_github(repo, io.StringIO(), force=False, install=spec)
    assert not (repo / WORKFLOW_PATH).exists()


def test_schema_check_is_not_vacuous(repo: Path) -> None:
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    broken = _workflow(repo)
    del broken["jobs"]["run"]["runs-on"]
    with pytest.raises(jsonschema.ValidationError):
        _validate(broken)


def test_workflow_has_the_promised_shape(repo: Path) -> None:
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    wf = _workflow(repo)
    assert wf["on"]["schedule"] == [{"cron": "*/30 * * * *"}]
    assert "workflow_dispatch" in wf["on"]
    assert wf["concurrency"] == {"group": "goal-harness", "cancel-in-progress": False}
    assert wf["permissions"] == {}
    job = wf["jobs"]["run"]
    assert job["permissions"] == {"contents": "write"}
    assert job["runs-on"] == "ubuntu-latest"
    uses = {s["uses"].split("@")[0]: s for s in job["steps"] if "uses" in s}
    assert uses["actions/checkout"]["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert uses["actions/setup-python"]["with"] == {"python-version": "3.11"}
    assert _step(wf, "Install goal-harness")["run"] == f'python -m pip install "{PINNED}"'
    assert job["timeout-minutes"] == 360
    bubblewrap = _step(wf, "Install bubblewrap")["run"]
    assert "sudo apt-get install -y -qq bubblewrap" in bubblewrap
    assert "sudo sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0" in bubblewrap
    fetch = _step(wf, "Fetch goal branches")["run"]
    assert '"+refs/heads/harness/*:refs/remotes/origin/harness/*"' in fetch
    write = _step(wf, "Write the secret to a file")
    assert write["env"] == {"HARNESS_SECRET": "${{ secrets.HARNESS_SECRET }}"}
    run = _step(wf, "Run goals")
    assert run["env"] == {
        "HARNESS_SECRET_FILE": "${{ runner.temp }}/goal-harness-secret",
        "HARNESS_PUSH_TOKEN": "${{ github.token }}",
        "GIT_ASKPASS": "${{ runner.temp }}/goal-harness-askpass",
    }
    assert "harness run --push origin" in run["run"]
    summary = _step(wf, "Summary")
    assert summary["if"] == "always()"
    assert summary["env"] == {"HARNESS_SECRET_FILE": "${{ runner.temp }}/goal-harness-secret"}
    assert "$GITHUB_STEP_SUMMARY" in summary["run"]
    assert "pin" in (repo / WORKFLOW_PATH).read_text().lower()
    removal = _step(wf, "Remove the secret file")
    assert removal["if"] == "always()" and "goal-harness-secret" in removal["run"]
    secret_steps = [st["name"] for st in job["steps"] if "secrets." in str(st)]
    assert secret_steps == ["Write the secret to a file"]


@pytest.mark.parametrize(
    ("code", "job_fails"), [(0, False), (4, False), (1, True), (2, True), (3, True)]
)
def test_run_step_fails_the_job_on_1_2_3_not_on_busy(
    repo: Path, tmp_path: Path, code: int, job_fails: bool
) -> None:
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "harness").write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/args"\nexit {code}\n')
    (stub / "harness").chmod(0o755)
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"}
    proc = _bash(_step(_workflow(repo), "Run goals")["run"], repo, env)
    assert (tmp_path / "args").read_text() == "run --push origin\n"
    assert (proc.returncode == code) if job_fails else (proc.returncode == 0), proc
    if job_fails:
        assert f"::error::harness run exited {code}" in proc.stdout


def test_fetch_step_makes_local_goal_branches(repo: Path, tmp_path: Path) -> None:
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    fetch = _step(_workflow(repo), "Fetch goal branches")["run"]
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    assert _bash(fetch, clone, dict(os.environ)).returncode == 0  # no goal branch yet: fine
    git(repo, "push", "-q", str(remote), "main:refs/heads/harness/g1")
    assert _bash(fetch, clone, dict(os.environ)).returncode == 0
    assert git(clone, "rev-parse", "refs/heads/harness/g1") == git(repo, "rev-parse", "main")


def test_fetch_step_leaves_an_existing_goal_branch_alone(repo: Path, tmp_path: Path) -> None:
    # A kept clone (self-hosted runner) may hold results it never pushed: `harness run
    # --push` pushes them; the fetch step must neither fail nor move the branch back.
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    fetch = _step(_workflow(repo), "Fetch goal branches")["run"]
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    git(repo, "push", "-q", str(remote), "main:refs/heads/harness/g1")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "branch", "-q", "harness/g1", "origin/harness/g1")
    git(clone, "commit", "-q", "--allow-empty", "-m", "unpushed")
    git(clone, "branch", "-q", "-f", "harness/g1", "HEAD")
    ahead = git(clone, "rev-parse", "HEAD")
    assert _bash(fetch, clone, dict(os.environ)).returncode == 0
    assert git(clone, "rev-parse", "refs/heads/harness/g1") == ahead


def test_workflow_steps_run_a_goal_and_push_it(managed: ManagedFactory, tmp_path: Path) -> None:
    """Fetch, run and summary steps as GitHub would run them, in a fresh clone."""
    repo: ManagedRepo = managed(mode="fix-on-1")
    ci_github(repo.root, io.StringIO(), force=False, install=PINNED)
    wf = _workflow(repo.root)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.root), str(remote))
    clone = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    summary = tmp_path / "summary.md"
    env = {**repo.env, "PATH": f"{BIN}:{os.environ['PATH']}", "GITHUB_STEP_SUMMARY": str(summary)}
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    names = ("Fetch goal branches", "Write the secret to a file", "Run goals", "Summary")
    for name in (*names, "Write the report site", "Remove the secret file"):
        step = _step(wf, name)
        proc = _bash(step["run"], clone, _step_env(step, env, temp))
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr)
    # The secret is gone; the site the upload step takes is there.
    assert [p.name for p in temp.iterdir()] == ["goal-harness-report"]
    site = temp / "goal-harness-report"
    assert sorted(p.name for p in site.iterdir()) == ["g1.html", "index.html"]
    upload = _step(wf, "Upload the report site")
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "always()"
    assert upload["with"]["path"] == "${{ runner.temp }}/goal-harness-report"
    pushed = git(remote, "rev-parse", "refs/heads/harness/g1")
    assert pushed == git(clone, "rev-parse", "refs/heads/harness/g1")
    assert "g1 completed step=- iteration=1" in summary.read_text()


# A build that looks for the secret in every process environment and command line it can read.
SCANNING_AGENT = """
import os, pathlib
counters = pathlib.Path(os.environ["TEST_COUNTER_DIR"])
secret = (counters / "secret-value").read_bytes().strip()
hits = []
for proc in pathlib.Path("/proc").iterdir():
    for part in ("environ", "cmdline"):
        try:
            if proc.name.isdigit() and secret in (proc / part).read_bytes():
                hits.append((proc / "comm").read_text().strip())
        except OSError:
            pass
(counters / "environ-hits.txt").write_text("\\n".join(sorted(hits)))
pathlib.Path("value.txt").write_text("right\\n")
"""


@pytest.mark.parametrize("generated", [True, False])
def test_generated_workflow_keeps_the_secret_out_of_every_environment(
    managed: ManagedFactory, tmp_path: Path, generated: bool
) -> None:
    """During the Run goals step the agent reads /proc/*/environ: the secret is in none
    (as root too: the harness gets only the file's path). The control run hands the secret
    to the step's bash as the workflow did before, and the same scan finds it there."""
    import secrets as random

    goal = {
        "version": 1,
        "id": "g1",
        "owner": "owner@example.com",
        "objective": "Make value.txt say right.\n",
        "build": {"run": [sys.executable, "scan.py"], "timeout": "60s"},
        "judge": {"run": [sys.executable, "judge.py"], "timeout": "60s"},
        "budget": {"max_iterations": 3},
    }
    repo: ManagedRepo = managed(goal=goal, files={"scan.py": SCANNING_AGENT})
    secret = random.token_hex(32)  # unique: other test runs on this machine hold SECRET
    (repo.counters / "secret-value").write_text(secret)
    ci_github(repo.root, io.StringIO(), force=False, install=PINNED)
    wf = _workflow(repo.root)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.root), str(remote))
    clone = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {**repo.env, "PATH": f"{BIN}:{os.environ['PATH']}"}
    names = ("Write the secret to a file", "Run goals", "Remove the secret file")
    for name in names:
        step = _step(wf, name)
        step_env = _step_env(step, env, temp, secret)
        if not generated and name == "Run goals":
            step_env = _step_env({"env": {"HARNESS_SECRET": secret}}, env, temp, secret)
        proc = _bash(step["run"], clone, step_env)
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr)
    hits = (repo.counters / "environ-hits.txt").read_text().split()
    assert repo.count("judge") == ["1"]
    if generated:
        assert hits == []
    else:
        assert "bash" in hits  # the step's shell, alive as the harness's parent


def test_summary_step_writes_status_and_reports(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    ci_github(repo.root, io.StringIO(), force=False, install=PINNED)
    summary_file = tmp_path / "summary.md"
    env = {
        **repo.env,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary_file),
    }
    proc = _bash(_step(_workflow(repo.root), "Summary")["run"], repo.root, env)
    assert proc.returncode == 0, proc.stderr
    text = summary_file.read_text()
    assert "g1 completed step=- iteration=1" in text
    assert "# Goal `g1`" in text and "| status | completed |" in text


def test_summary_step_survives_a_failing_harness(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    ci_github(repo.root, io.StringIO(), force=False, install=PINNED)
    summary_file = tmp_path / "summary.md"
    env = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    env |= {
        "HARNESS_SECRET_FILE": str(tmp_path / "absent"),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary_file),
    }
    proc = _bash(_step(_workflow(repo.root), "Summary")["run"], repo.root, env)
    assert proc.returncode == 0, proc.stderr
    assert "(harness status exited 3)" in summary_file.read_text()
    assert "(no report for harness/g1)" in summary_file.read_text()


def test_workflow_follows_the_configured_branch_prefix(repo: Path) -> None:
    (repo / ".harness").mkdir()
    (repo / ".harness" / "config.yaml").write_text("version: 1\nbranch_prefix: bots/\n")
    ci_github(repo, io.StringIO(), force=False, install=PINNED)
    wf = _workflow(repo)
    assert (
        "+refs/heads/bots/*:refs/remotes/origin/bots/*" in _step(wf, "Fetch goal branches")["run"]
    )
    assert '"${ref#bots/}"' in _step(wf, "Summary")["run"]


def test_github_schedule_option(repo: Path) -> None:
    ci_github(repo, io.StringIO(), force=False, cron="0 2 * * 1-5", install=PINNED)
    workflow = _workflow(repo)
    assert workflow["on"]["schedule"] == [{"cron": "0 2 * * 1-5"}]
    _validate(workflow)


@pytest.mark.parametrize("cron", ["0 2 * *", "0 2 * * * *", '0 2 * * "x"', "@daily"])
def test_github_bad_schedule_is_refused(repo: Path, cron: str) -> None:
    with pytest.raises(InvalidInput, match=r"^--schedule: .* \(expected a cron expression"):
        ci_github(repo, io.StringIO(), force=False, cron=cron, install=PINNED)
    assert not (repo / WORKFLOW_PATH).exists()


def test_github_refuses_to_overwrite_without_force(repo: Path) -> None:
    target = repo / WORKFLOW_PATH
    target.parent.mkdir(parents=True)
    target.write_text("mine\n")
    with pytest.raises(InvalidInput) as caught:
        ci_github(repo, io.StringIO(), force=False, install=PINNED)
    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        f"{WORKFLOW_PATH}: already exists (expected no file; pass --force to replace it)"
    )
    assert target.read_text() == "mine\n"
    assert ci_github(repo, io.StringIO(), force=True, install=PINNED) == 0
    assert target.read_text().startswith("# goal-harness")


def test_github_outside_a_repository_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not inside a git repository"):
        ci_github(tmp_path, io.StringIO(), force=False, install=PINNED)


# --- cron -------------------------------------------------------------------------------


def _cron_entries(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _cron(root: Path, every: int, env: dict[str, str]) -> tuple[list[str], str]:
    out = io.StringIO()
    assert ci_cron(root, out, every, env) == 0
    entries = _cron_entries(out.getvalue())
    assert len(entries) == 1
    return entries[0].split(maxsplit=5), out.getvalue()


def test_cron_line_has_five_time_fields_and_runs_harness(repo: Path, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret"
    fields, _ = _cron(repo, 30, {"HARNESS_SECRET_FILE": str(secret_file)})
    assert fields[:5] == ["*/30", "*", "*", "*", "*"]
    assert all(CRON_FIELD.match(field) for field in fields[:5])
    words = shlex.split(fields[5])
    assert words[:3] == ["cd", str(repo), "&&"]
    assert words[3] == f"PATH={BIN}:/usr/local/bin:/usr/bin:/bin"
    assert words[4] == f"HARNESS_SECRET_FILE={secret_file}"
    assert words[5] == "exec"  # no shell stays alive as the harness's parent
    assert Path(words[6]).is_absolute() and Path(words[6]).name == "harness"
    assert words[7:] == ["run", ">>", str(repo / ".git" / "harness" / "cron.log"), "2>&1"]


def test_cron_and_systemd_follow_the_remote(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    subprocess.run(["git", "remote", "add", "origin", str(bare)], cwd=repo, check=True)
    env = {"HARNESS_SECRET_FILE": str(tmp_path / "secret")}
    fields, _ = _cron(repo, 30, env)
    words = shlex.split(fields[5])
    assert words[words.index("run") :][:3] == ["run", "--push", "origin"]
    out = io.StringIO()
    assert ci_systemd(repo, out, None, 30, env) == 0
    service = _ini(_printed_units(out.getvalue())[SERVICE_NAME])["Service"]
    assert service["ExecStart"].endswith(" run --push origin")


def test_cron_uses_the_default_secret_file(repo: Path, tmp_path: Path) -> None:
    fields, text = _cron(repo, 10, {"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert f"HARNESS_SECRET_FILE={tmp_path / 'cfg' / 'goal-harness' / 'secret'}" in fields[5]
    assert "# note: " in text and "does not exist yet: run `harness secret new`" in text


def test_cron_line_really_runs_the_goals(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    secret_file.chmod(0o600)
    fields, text = _cron(repo.root, 5, {"HARNESS_SECRET_FILE": str(secret_file)})
    assert "# note:" not in text
    # cron's own environment: a minimal PATH, no harness variables, run from $HOME.
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TEST_COUNTER_DIR": repo.env["TEST_COUNTER_DIR"],
        # The scripted agent counts its runs outside the repository, which a contained
        # step cannot write (tests/conftest.py).
        "HARNESS_SANDBOX": "off",
    }
    proc = subprocess.run(["sh", "-c", fields[5]], cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0
    log = (repo.root / ".git" / "harness" / "cron.log").read_text()
    assert " g1 #1 started " in log and "completed" in log
    assert repo.status()["status"] == "completed"


def test_cron_line_sets_path_and_pushes(managed: ManagedFactory, tmp_path: Path) -> None:
    """A judge named as a bare `python` finds the harness's venv python under cron's own
    minimal PATH, and `--push origin` brings the result to the bare remote."""
    goal = base_goal() | {"judge": {"run": ["python", "judge.py"], "timeout": "60s"}}
    repo: ManagedRepo = managed(goal=goal, mode="fix-on-1")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo.root, "remote", "add", "origin", str(remote))
    git(repo.root, "push", "-q", "origin", "main")
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    secret_file.chmod(0o600)
    cron_path = "/usr/bin:/bin"  # cron's own PATH, also the PATH the generator ran with
    out = io.StringIO()
    env = {"HARNESS_SECRET_FILE": str(secret_file), "PATH": cron_path}
    ci_cron(repo.root, out, 5, env, push="origin")
    (entry,) = _cron_entries(out.getvalue())
    words = shlex.split(entry.split(maxsplit=5)[5])
    assert words[words.index("run") :][:3] == ["run", "--push", "origin"]
    run_env = {
        "PATH": cron_path,
        "HOME": str(tmp_path),
        "TEST_COUNTER_DIR": repo.env["TEST_COUNTER_DIR"],
        "HARNESS_SANDBOX": "off",
    }
    command = entry.split(maxsplit=5)[5]
    proc = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=run_env, timeout=120)
    log = (repo.root / ".git" / "harness" / "cron.log").read_text()
    assert proc.returncode == 0, log
    assert repo.status()["status"] == "completed", log
    assert repo.count("judge") == ["1"]
    assert git(remote, "rev-parse", "refs/heads/harness/g1") == git(
        repo.root, "rev-parse", "refs/heads/harness/g1"
    )


def test_at_gives_a_daily_schedule() -> None:
    moment = when(None, "02:00")
    assert (moment.cron, moment.calendar, moment.text) == (
        "0 2 * * *",
        "*-*-* 02:00:00",
        "daily at 02:00",
    )
    assert when(None, "7:05").cron == "5 7 * * *"
    assert when(None, None).cron == "*/30 * * * *"


@pytest.mark.parametrize("at", ["24:00", "02:60", "2", "02:5", "noon", " 02:00"])
def test_bad_at_is_refused(at: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        when(None, at)
    assert str(caught.value) == f"--at: {at} (expected a time of day HH:MM, 00:00 to 23:59)"


def test_at_and_every_together_are_refused() -> None:
    with pytest.raises(InvalidInput, match=r"^--at: 02:00 given with --every \(expected one"):
        when(10, "02:00")


FAKE_CRONTAB = """#!/bin/sh
# crontab as far as `crontab -l` and `crontab -` go, kept in $FAKE_CRONTAB_FILE.
case "$1" in
  -l) [ -f "$FAKE_CRONTAB_FILE" ] || { echo "no crontab for $(id -un)" >&2; exit 1; }
      cat "$FAKE_CRONTAB_FILE" ;;
  -) cat > "$FAKE_CRONTAB_FILE" ;;
  *) echo "fake crontab: $1" >&2; exit 2 ;;
esac
"""


def _fake_crontab(tmp_path: Path) -> tuple[dict[str, str], Path]:
    if shutil.which("crontab") is not None:
        pytest.skip("a real crontab is installed: this test would change the user's crontab")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "crontab").write_text(FAKE_CRONTAB)
    (stub / "crontab").chmod(0o755)
    table = tmp_path / "crontab.txt"
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "FAKE_CRONTAB_FILE": str(table)}
    return env, table


def _install_line(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if "install or update: " in ln]
    return line.split("install or update: ", 1)[1]


def test_install_line_is_idempotent_and_replaces_in_place(repo: Path, tmp_path: Path) -> None:
    env, table = _fake_crontab(tmp_path)
    other = "15 3 * * * /usr/bin/backup\n"
    out = io.StringIO()
    ci_cron(repo, out, 10, {"PATH": "/usr/bin:/bin"})
    install = _install_line(out.getvalue())
    assert install.endswith(" ci cron --every 10 --install")
    for _ in range(2):
        proc = subprocess.run(["sh", "-c", install], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert "crontab: replaced the earlier entry for" in proc.stdout
    first = table.read_text()
    assert first.count(f"# >>> goal-harness {repo} >>>") == 1
    assert len(_cron_entries(first)) == 1
    table.write_text(other + first + other.replace("backup", "report"))
    cli_env = {**env, "HARNESS_SECRET_FILE": str(tmp_path / "s")}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "ci", "cron", "--at", "02:00", "--install"],
        cwd=repo,
        env=cli_env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    entries = _cron_entries(table.read_text())
    assert len(entries) == 3
    assert entries[0] == other.strip() and entries[2] == "15 3 * * * /usr/bin/report"
    assert entries[1].startswith("0 2 * * * cd ")


def test_install_without_crontab_is_a_clear_error(repo: Path, tmp_path: Path) -> None:
    only_git = tmp_path / "bin"  # a PATH with git and no crontab
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    env = {**os.environ, "PATH": str(only_git)}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "ci", "cron", "--install"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("harness: crontab: not found on PATH (expected ")


@pytest.mark.parametrize(
    ("every", "cron", "calendar"),
    [
        (1, "*/1 * * * *", "*:0/1"),
        (10, "*/10 * * * *", "*:0/10"),
        (30, "*/30 * * * *", "*:0/30"),
        (60, "0 */1 * * *", "0/1:00"),
        (360, "0 */6 * * *", "0/6:00"),
        (720, "0 */12 * * *", "0/12:00"),
        (1440, "0 0 * * *", "*-*-* 00:00:00"),
    ],
)
def test_schedules(every: int, cron: str, calendar: str) -> None:
    assert schedule(every) == (cron, calendar)


@pytest.mark.parametrize("every", [0, -5, 7, 45, 90, 300, 2880])
def test_uneven_or_bad_intervals_are_refused(repo: Path, every: int) -> None:
    with pytest.raises(InvalidInput) as caught:
        ci_cron(repo, io.StringIO(), every, {})
    assert str(caught.value).startswith(f"--every: {every} (expected minutes that divide an hour")


def test_cron_refuses_a_percent_sign_in_a_path(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot hold '%'"):
        ci_cron(repo, io.StringIO(), 30, {"HARNESS_SECRET_FILE": str(tmp_path / "100%")})


# --- systemd ----------------------------------------------------------------------------


def _ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]  # systemd keys are case-sensitive
    parser.read_string(text)
    return parser


def _printed_units(text: str) -> dict[str, str]:
    parts = re.split(r"^# --- (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_systemd_units_printed_with_headers(repo: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    env = {"HARNESS_SECRET_FILE": str(tmp_path / "secret")}
    assert ci_systemd(repo, out, None, 30, env) == 0
    units = _printed_units(out.getvalue())
    assert set(units) == {SERVICE_NAME, TIMER_NAME}
    assert "systemctl --user enable --now goal-harness.timer" in units[TIMER_NAME]
    service = _ini(units[SERVICE_NAME])["Service"]
    assert service["ExecStart"].endswith(" run")


def test_systemd_units_written_parse_with_expected_keys(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "units"
    out = io.StringIO()
    env = {"HARNESS_SECRET_FILE": str(tmp_path / "secret")} | _state(tmp_path)
    assert ci_systemd(repo, out, folder, 15, env) == 0
    assert f"wrote {folder / SERVICE_NAME}" in out.getvalue()
    assert out.getvalue().endswith(
        "next: systemctl --user daemon-reload && systemctl --user enable --now goal-harness.timer\n"
    )
    service = _ini((folder / SERVICE_NAME).read_text())
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["WorkingDirectory"] == str(repo)
    environment = re.findall(r"^Environment=(.*)$", (folder / SERVICE_NAME).read_text(), re.M)
    assert environment == [
        f"HARNESS_SECRET_FILE={tmp_path / 'secret'}",
        f"PATH={BIN}:/usr/local/bin:/usr/bin:/bin",
    ]
    executable, argument = service["Service"]["ExecStart"].split()
    assert Path(executable).is_absolute() and os.access(executable, os.X_OK)
    assert argument == "run"
    for key, value in {
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "read-only",
        "ReadWritePaths": f"{repo} {_homes(tmp_path)}",
        "SuccessExitStatus": "4",
        # A stop goes to the harness alone (it ends its step and records the stop), not to
        # its git processes under it (tests/e2e/test_stop_signals.py, the group case).
        "KillMode": "mixed",
    }.items():
        assert service["Service"][key] == value
    assert _homes(tmp_path).is_dir()  # made: ReadWritePaths of a missing path fails the unit
    # Nothing that would stop bwrap making its namespaces or mounting its own /proc.
    for key in service["Service"]:
        assert not key.startswith(("RestrictNamespaces", "PrivateUsers", "ProtectProc")), key
        assert not key.startswith(("ProtectKernel", "SystemCallFilter", "PrivateNetwork")), key
    timer = _ini((folder / TIMER_NAME).read_text())
    assert timer["Timer"]["OnCalendar"] == "*:0/15"
    assert timer["Timer"]["Persistent"] == "true"
    assert timer["Timer"]["Unit"] == SERVICE_NAME
    assert timer["Install"]["WantedBy"] == "timers.target"


def _state(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def _homes(tmp_path: Path) -> Path:
    return tmp_path / "state" / "goal-harness" / "homes"


def test_systemd_service_can_write_the_sandbox_binds(repo: Path, tmp_path: Path) -> None:
    """Only the `rw:` binds: a read-only bind (`~/.aider`) stays read-only in the unit too."""
    (repo / ".harness").mkdir()
    binds = "[rw:~/.codex, rw:/var/cache/pip, ~/.aider]"
    (repo / ".harness" / "config.yaml").write_text(f"sandbox_binds: {binds}\n")
    env = _state(tmp_path) | {"HOME": str(tmp_path / "home")}
    out = io.StringIO()
    ci_systemd(repo, out, None, 30, env)
    service = _ini(_printed_units(out.getvalue())[SERVICE_NAME])["Service"]
    assert service["ReadWritePaths"].split() == [
        str(repo),
        str(_homes(tmp_path)),
        f"-{tmp_path / 'home' / '.codex'}",
        "-/var/cache/pip",
    ]


def _systemd_analyze_works(folder: Path) -> bool:
    """Whether `systemd-analyze verify` can run here at all (some containers lack what it
    needs), tried on a unit that is known to be good."""
    if shutil.which("systemd-analyze") is None:
        return False
    folder.mkdir()
    unit = folder / "probe.service"
    unit.write_text("[Service]\nType=oneshot\nExecStart=/bin/true\n")
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, timeout=60)
    return proc.returncode == 0


def test_systemd_accepts_the_units(repo: Path, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        need_tool("needs systemd-analyze (apt-get install systemd)")
    if not _systemd_analyze_works(tmp_path / "probe"):
        pytest.skip("systemd-analyze verify does not work here")
    folder = tmp_path / "units"
    ci_systemd(
        repo,
        io.StringIO(),
        folder,
        30,
        {"HARNESS_SECRET_FILE": str(tmp_path / "s")} | _state(tmp_path),
    )
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(folder / SERVICE_NAME), str(folder / TIMER_NAME)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    about_ours = [line for line in proc.stderr.splitlines() if "goal-harness" in line]
    assert proc.returncode == 0 and not about_ours, proc.stderr
    calendar = _ini((folder / TIMER_NAME).read_text())["Timer"]["OnCalendar"]
    check = subprocess.run(["systemd-analyze", "calendar", calendar], capture_output=True)
    assert check.returncode == 0


def test_systemd_refuses_to_overwrite_without_force(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "units"
    folder.mkdir()
    (folder / TIMER_NAME).write_text("mine\n")
    with pytest.raises(InvalidInput, match=r"already exists .*--force"):
        ci_systemd(repo, io.StringIO(), folder, 30, _state(tmp_path))
    assert (folder / TIMER_NAME).read_text() == "mine\n"
    assert not (folder / SERVICE_NAME).exists()
    assert ci_systemd(repo, io.StringIO(), folder, 30, _state(tmp_path), force=True) == 0
    assert "[Timer]" in (folder / TIMER_NAME).read_text()


def test_systemd_refuses_a_path_it_would_split(tmp_path: Path) -> None:
    root = tmp_path / "my repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    with pytest.raises(InvalidInput, match="cannot hold blanks"):
        ci_systemd(root, io.StringIO(), None, 30, _state(tmp_path))


# --- through the command line (once harness/cli.py wires `harness ci`) -----------------

needs_wiring = pytest.mark.skipif(
    "ci" not in cli.commands,
    reason="`harness ci` is not wired into harness/cli.py yet",
)


@needs_wiring
def test_cli_ci_github_then_refusal(managed: ManagedFactory) -> None:
    repo: ManagedRepo = managed()
    first = repo.harness("ci", "github", "--install", PINNED, check=0)
    assert f"wrote {WORKFLOW_PATH}" in first.stdout
    again = repo.harness("ci", "github", "--install", PINNED, check=2)
    assert "already exists" in again.stderr and "--force" in again.stderr
    repo.harness("ci", "github", "--install", PINNED, "--force", check=0)


@needs_wiring
def test_cli_ci_cron_and_systemd(managed: ManagedFactory, tmp_path: Path) -> None:
    repo: ManagedRepo = managed()
    cron = repo.harness("ci", "cron", "--every", "15", check=0)
    assert len(_cron_entries(cron.stdout)) == 1
    assert _cron_entries(cron.stdout)[0].startswith("*/15 * * * * cd ")
    repo.harness("ci", "cron", "--every", "45", check=2)
    units = tmp_path / "units"
    repo.harness("ci", "systemd", "--dir", str(units), "--every", "60", check=0)
    assert _ini((units / TIMER_NAME).read_text())["Timer"]["OnCalendar"] == "0/1:00"
    repo.harness("ci", "systemd", "--dir", str(units), check=2)
    repo.harness("ci", "systemd", "--dir", str(units), "--force", check=0)


# --- GitHub Actions, one job per goal ---------------------------------------------------


def _matrix(repo: Path) -> dict[str, Any]:
    assert ci_github(repo, io.StringIO(), force=False, matrix=True, install=PINNED) == 0
    return _workflow(repo)


def test_matrix_workflow_validates_and_has_the_promised_shape(repo: Path) -> None:
    wf = _matrix(repo)
    _validate(wf)
    jobs = wf["jobs"]
    assert list(jobs) == ["goals", "run", "summary"]
    assert all(isinstance(job["timeout-minutes"], int) for job in jobs.values())
    run = jobs["run"]
    assert run["strategy"]["matrix"]["goal"] == "${{ fromJSON(needs.goals.outputs.ids) }}"
    assert run["concurrency"] == {
        "group": "goal-harness-${{ matrix.goal }}",
        "cancel-in-progress": False,
    }
    for job in jobs.values():
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
        assert checkout["with"]["persist-credentials"] is False
        install = next(s for s in job["steps"] if s.get("name") == "Install goal-harness")
        assert install["run"] == f'python -m pip install "{PINNED}"'
    # The job token reaches the harness's git through one variable, scrubbed from its steps.
    holders = [
        (name, step["name"])
        for name, job in jobs.items()
        for step in job["steps"]
        if "HARNESS_PUSH_TOKEN" in step.get("env", {})
    ]
    assert holders == [("run", "Run the goal")]
    run_step = next(s for s in run["steps"] if s.get("name") == "Run the goal")
    assert 'harness run "$GOAL" --push origin' in run_step["run"]
    summary = jobs["summary"]
    assert summary["if"] == "always()" and summary["needs"] == ["goals", "run"]
    check = next(s for s in summary["steps"] if s.get("name") == "Summary")["run"]
    assert "harness status --check" in check and "exit 1" in check


def test_matrix_schema_check_is_not_vacuous(repo: Path) -> None:
    wf = _matrix(repo)
    wf["jobs"]["run"]["timeout-minutes"] = "six hours"
    with pytest.raises(jsonschema.ValidationError):
        _validate(wf)


def test_matrix_lists_only_goals_with_something_to_do(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo: ManagedRepo = managed(mode="fix-on-1")
    (repo.root / "goals" / "g2.yaml").write_text(
        (repo.root / "goals" / "g1.yaml").read_text().replace("id: g1", "id: g2")
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "g2, not approved yet")
    wf = _matrix(repo.root)
    listing = next(s for s in wf["jobs"]["goals"]["steps"] if s.get("name") == "List goals")
    output = tmp_path / "github-output"
    # No secret in this job: status reads the records unverified.
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "GITHUB_OUTPUT": str(output),
    }
    subprocess.run(["bash", "-c", listing["run"]], cwd=repo.root, env=env, check=True)
    assert output.read_text() == 'ids=["g1"]\n'
    repo.harness("run", check=0)
    output.unlink()
    subprocess.run(["bash", "-c", listing["run"]], cwd=repo.root, env=env, check=True)
    assert output.read_text() == "ids=[]\n"


def test_matrix_summary_fails_and_annotates_when_a_goal_needs_a_human(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    ship = {"run": ["sh", "-c", "true"]}
    repo: ManagedRepo = managed(goal=base_goal() | {"ship": ship}, mode="fix-on-1")
    repo.harness("run", check=0)
    wf = _matrix(repo.root)
    step = next(s for s in wf["jobs"]["summary"]["steps"] if s.get("name") == "Summary")
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HARNESS_SECRET": SECRET,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    proc = subprocess.run(
        ["bash", "-c", step["run"]], cwd=repo.root, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1, proc
    assert "::warning title=goal g1::parked_at_eyes at gate ship" in proc.stdout
    assert "::error::a goal is parked at eyes: a decision is due" in proc.stdout
    assert "g1 parked_at_eyes" in (tmp_path / "summary.md").read_text()


def test_matrix_annotations_escape_what_they_quote(repo: Path, tmp_path: Path) -> None:
    # A status row whose fields carry a newline and a workflow command: the annotation
    # stays one command, its message and title escaped as GitHub decodes them.
    wf = _matrix(repo)
    step = next(s for s in wf["jobs"]["summary"]["steps"] if s.get("name") == "Summary")
    rows = [{"id": "g1,x:y", "status": "needs_attention", "gate": "t\n::error::forged 100%"}]
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "harness").write_text(
        '#!/bin/sh\n[ "$2" = --json ] && cat "$ROWS"\n[ "$2" = --check ] && exit 11\nexit 0\n'
    )
    (fake / "harness").chmod(0o755)
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    env = {
        "PATH": f"{fake}:{BIN}:/usr/bin:/bin",
        "ROWS": str(tmp_path / "rows.json"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    proc = subprocess.run(
        ["bash", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1, proc
    assert (
        "::warning title=goal g1%2Cx%3Ay::needs_attention at gate t%0A::error::forged 100%25\n"
        in proc.stdout
    )
    assert not any(line.startswith("::error::forged") for line in proc.stdout.splitlines())


def test_the_push_token_never_reaches_a_step() -> None:
    from harness.loop.steps import child_env

    assert child_env({"HARNESS_PUSH_TOKEN": "ghs_x", "PATH": "/bin"}, (), {}) == {"PATH": "/bin"}
