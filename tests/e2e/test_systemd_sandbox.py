"""The generated systemd service leaves the sandbox working: a contained goal run under the
service's file-system limits completes.

No systemd manager runs here, so the service's limits are rebuilt with bubblewrap from the
generated unit itself, as a user manager applies them: a user namespace of its own
(`systemd --user` makes one for these options), no new privileges (bwrap always sets it),
the whole file system read-only (`ProtectSystem=strict`, `ProtectHome=read-only`), a
private /tmp (`PrivateTmp`), writable only what `ReadWritePaths` names (`-`: if it exists).
"""

from __future__ import annotations

import configparser
import io
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
from harness.commands.ci import SERVICE_NAME, ci_systemd
from tests.e2e.test_sandbox import _events
from tests.managed import Key as OwnerKey
from tests.managed import ManagedRepo, base_goal
from tests.tools import needs_bwrap


def _service(repo: ManagedRepo) -> configparser.SectionProxy:
    out = io.StringIO()
    ci_systemd(repo.root, out, None, 30, repo.env)
    [text] = re.findall(rf"^# --- {SERVICE_NAME}\n(.*?)(?=^# --- |\Z)", out.getvalue(), re.M | re.S)
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read_string(text)
    return parser["Service"]


def _as_the_service(service: configparser.SectionProxy) -> list[str]:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    assert (service["ProtectSystem"], service["ProtectHome"]) == ("strict", "read-only")
    assert (service["PrivateTmp"], service["NoNewPrivileges"]) == ("yes", "yes")
    argv = [bwrap, "--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/tmp"]
    # A service's harness lives outside /tmp (PrivateTmp hides /tmp: scheduling.md); this
    # test's may not (CI runs a clone under /tmp), so its installation is shown again,
    # read-only, as it would be from anywhere else.
    argv += [arg for path in _installation() for arg in ("--ro-bind", path, path)]
    for entry in service["ReadWritePaths"].split():
        path = entry.removeprefix("-")
        argv += ["--bind-try" if entry.startswith("-") else "--bind", path, path]
    return [*argv, "--chdir", service["WorkingDirectory"], "--", *service["ExecStart"].split()]


@needs_bwrap
def test_a_contained_goal_runs_within_the_services_limits(
    tmp_path: Path, owner_key: OwnerKey
) -> None:
    goal = base_goal()
    goal["build"]["run"] = [sys.executable, "-c", "open('value.txt', 'w').write('right\\n')"]
    counters = tmp_path / "counters"  # where the judge counts: a bind of the config
    config = f"sandbox: required\nsandbox_binds: ['rw:{counters}']\n"
    repo = ManagedRepo.create(
        tmp_path / "repo", owner_key, goal=goal, files={".harness/config.yaml": config}
    )
    # The goals' homes outside /tmp, as on a runner (~/.local/state): PrivateTmp would
    # otherwise give them a writable place of its own.
    state = Path(tempfile.mkdtemp(prefix="state-", dir=_outside_tmp()))
    repo.env["XDG_STATE_HOME"] = str(state)
    try:
        _run_as_the_service(repo)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def _installation() -> list[str]:
    """The running harness's venv and source folder, where they are under /tmp."""
    places = {Path(sys.prefix).resolve(), Path(harness.__file__).resolve().parents[1]}
    return sorted(str(p) for p in places if p.is_relative_to("/tmp"))


def _outside_tmp() -> Path:
    base = Path.home() / ".cache" / "goal-harness" / "test-state"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _run_as_the_service(repo: ManagedRepo) -> None:
    service = _service(repo)
    assert service["ExecStart"].split()[0].startswith(sys.prefix)
    proc = subprocess.run(
        _as_the_service(service),
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert repo.status()["status"] == "completed"
    started = [e for e in _events(repo) if e["type"] == "step.started"]
    assert {e["data"]["sandbox"] for e in started} == {"bwrap"}  # type: ignore[index]
