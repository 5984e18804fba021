"""Issue 30, item 7: `ci cron` and `ci systemd` carry the notify config's variables, read
from a file outside the repository, never written into the entry or a unit."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.commands.ci import SERVICE_NAME, TIMER_NAME, ci_cron, ci_systemd
from harness.errors import InvalidInput
from tests.commands.test_ci import _cron_entries, _ini, _printed_units, _systemd_analyze_works
from tests.e2e.test_notify import Hook
from tests.managed import SECRET, ManagedFactory, git
from tests.tools import need_tool

NOTIFY = {"notify": {"webhook": "$HOOK_URL", "command": "true", "env": ["PAGER_TOKEN"]}}
# `&` and `?` would end or glob a shell word: the file's quoting keeps them.
URL_TAIL = "/hook?channel=nightly&token=abc"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".harness").mkdir()
    (root / ".harness" / "config.yaml").write_text(json.dumps(NOTIFY))
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "HARNESS_SECRET_FILE": str(tmp_path / "secret"),
    }


def _env_file(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "goal-harness" / "notify.env"


def _write_env_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)


def test_cron_names_the_variables_and_their_file_and_says_it_is_missing(
    repo: Path, tmp_path: Path
) -> None:
    out = io.StringIO()
    assert ci_cron(repo, out, 30, _env(tmp_path)) == 0
    text, file = out.getvalue(), _env_file(tmp_path)
    assert f"# notify (.harness/config.yaml) reads HOOK_URL, PAGER_TOKEN from {file}\n" in text
    assert f"# note: {file} does not exist yet: write HOOK_URL, PAGER_TOKEN into it" in text
    (entry,) = _cron_entries(text)
    assert f"&& set -a && {{ [ ! -r {file} ] || . {file}; }} && set +a && PATH=" in entry


def test_cron_notes_a_variable_the_file_lacks_and_a_file_others_read(
    repo: Path, tmp_path: Path
) -> None:
    file = _env_file(tmp_path)
    _write_env_file(file, "HOOK_URL='http://127.0.0.1:9/hook'\n")
    file.chmod(0o644)
    out = io.StringIO()
    ci_cron(repo, out, 30, _env(tmp_path))
    assert f"# note: {file} sets no PAGER_TOKEN: add NAME='value' lines\n" in out.getvalue()
    assert f"# note: {file} can be read by others: chmod 600 {file}\n" in out.getvalue()
    assert "127.0.0.1:9" not in out.getvalue()  # a value is never read into the entry


def test_an_env_file_inside_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    inside = repo / "notify.env"
    expected = f"--env-file: {inside} is inside the repository (expected a file outside it"
    with pytest.raises(InvalidInput, match=expected.replace("(", r"\(")):
        ci_cron(repo, io.StringIO(), 30, _env(tmp_path), env_file=inside)
    with pytest.raises(InvalidInput, match="is inside the repository"):
        ci_systemd(repo, io.StringIO(), None, 30, _env(tmp_path), env_file=inside)


def test_the_cron_line_runs_with_the_files_variables_and_notifies(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """cron's own environment has no HOOK_URL: the line's shell reads it from the file,
    quoting and all, and the run's notification reaches the server."""
    hook = Hook(200)
    try:
        config = {"notify": {"webhook": "$HOOK_URL"}}
        repo = managed(mode="fix-on-1", files={".harness/config.yaml": json.dumps(config)})
        secret = tmp_path / "secret"
        _write_env_file(secret, SECRET + "\n")
        file = tmp_path / "elsewhere" / "notify.env"
        _write_env_file(file, f"HOOK_URL='{hook.url}{URL_TAIL}'\n")
        out = io.StringIO()
        ci_cron(repo.root, out, 5, {"HARNESS_SECRET_FILE": str(secret)}, env_file=file)
        assert "# note:" not in out.getvalue() and hook.url not in out.getvalue()
        (entry,) = _cron_entries(out.getvalue())
        cron_env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TEST_COUNTER_DIR": repo.env["TEST_COUNTER_DIR"],
            "HARNESS_SANDBOX": "off",
        }
        command = entry.split(maxsplit=5)[5]
        proc = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=cron_env, timeout=120)
        log = (repo.root / ".git" / "harness" / "cron.log").read_text()
        assert proc.returncode == 0, log
        assert [d["status"] for d in hook.received] == ["completed"], log
        assert hook.paths == [f"/hook{URL_TAIL}"]
        assert hook.url not in log
    finally:
        hook.server.shutdown()


def test_a_missing_env_file_leaves_the_run_going_and_the_failure_named(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    config = {"notify": {"webhook": "$HOOK_URL"}}
    repo = managed(mode="fix-on-1", files={".harness/config.yaml": json.dumps(config)})
    secret = tmp_path / "secret"
    _write_env_file(secret, SECRET + "\n")
    file = tmp_path / "never-written.env"
    out = io.StringIO()
    ci_cron(repo.root, out, 5, {"HARNESS_SECRET_FILE": str(secret)}, env_file=file)
    (entry,) = _cron_entries(out.getvalue())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HARNESS_SANDBOX": "off"}
    env["TEST_COUNTER_DIR"] = repo.env["TEST_COUNTER_DIR"]
    proc = subprocess.run(["sh", "-c", entry.split(maxsplit=5)[5]], env=env, timeout=120)
    assert proc.returncode == 0
    assert repo.status()["status"] == "completed"
    log = (repo.root / ".git" / "harness" / "notify.log").read_text()
    assert "notify failed for g1 (completed): webhook: $HOOK_URL is not set" in log


def test_systemd_reads_the_variables_from_the_file(repo: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    assert ci_systemd(repo, out, None, 30, _env(tmp_path)) == 0
    file = _env_file(tmp_path)
    service_text = _printed_units(out.getvalue())[SERVICE_NAME]
    service = _ini(service_text)["Service"]
    assert service["EnvironmentFile"] == f"-{file}"
    assert f"# notify (.harness/config.yaml) reads HOOK_URL, PAGER_TOKEN from {file}" in (
        service_text
    )
    assert f"note: {file} does not exist yet" in out.getvalue()


def test_systemd_accepts_the_unit_with_the_environment_file(repo: Path, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        need_tool("needs systemd-analyze (apt-get install systemd)")
    if not _systemd_analyze_works(tmp_path / "probe"):
        pytest.skip("systemd-analyze verify does not work here")
    _write_env_file(_env_file(tmp_path), f"HOOK_URL='http://127.0.0.1:9{URL_TAIL}'\n")
    folder = tmp_path / "units"
    ci_systemd(repo, io.StringIO(), folder, 30, _env(tmp_path))
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(folder / SERVICE_NAME), str(folder / TIMER_NAME)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    about_ours = [line for line in proc.stderr.splitlines() if "goal-harness" in line]
    assert proc.returncode == 0 and not about_ours, proc.stderr
    assert "127.0.0.1:9" not in (folder / SERVICE_NAME).read_text()
