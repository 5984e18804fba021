"""Issue 30 item 11: what the generated GitHub workflows may hold, read from their YAML.

One test per property, each over both workflows (one job, and `--matrix`): every action
at a full commit, no token kept in `.git/config`, a write token in the pushing job only,
the secret offered through an environment, the harness never installed by a bare name
from an index; and actionlint, GitHub's own rules as a linter, finds nothing in either.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.commands.ci_github import WORKFLOW_PATH, ci_github
from harness.errors import InvalidInput
from harness.model.yamlutil import load_yaml
from tests.managed import git
from tests.workflows import PINNED, actionlint

KINDS = ["single", "matrix"]
SHA_PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _generate(repo: Path, kind: str, install: str = PINNED) -> dict[str, Any]:
    assert ci_github(repo, io.StringIO(), force=True, install=install, matrix=kind == "matrix") == 0
    data = load_yaml((repo / WORKFLOW_PATH).read_bytes(), WORKFLOW_PATH)
    assert isinstance(data, dict)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def _pushes(job: dict[str, Any]) -> bool:
    return any("--push" in step.get("run", "") for step in job["steps"])


@pytest.mark.parametrize("kind", KINDS)
def test_every_action_is_pinned_to_a_full_commit_with_its_tag(repo: Path, kind: str) -> None:
    uses = [step["uses"] for step in _steps(_generate(repo, kind)) if "uses" in step]
    assert uses and [u for u in uses if not SHA_PINNED.match(u)] == []
    # The tag each commit was taken for follows as a comment, for a reader and for Dependabot.
    lines = [ln for ln in (repo / WORKFLOW_PATH).read_text().splitlines() if "uses:" in ln]
    assert len(lines) == len(uses)
    assert all(re.search(r"@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", ln) for ln in lines), lines


@pytest.mark.parametrize("kind", KINDS)
def test_no_checkout_keeps_the_token_in_git_config(repo: Path, kind: str) -> None:
    workflow = _generate(repo, kind)
    for name, job in workflow["jobs"].items():
        checkouts = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert len(checkouts) == 1, name
        assert checkouts[0]["with"]["persist-credentials"] is False, name


@pytest.mark.parametrize("kind", KINDS)
def test_only_the_job_that_pushes_may_write(repo: Path, kind: str) -> None:
    workflow = _generate(repo, kind)
    assert workflow["permissions"] in ({}, {"contents": "read"})
    writers = [
        name
        for name, job in workflow["jobs"].items()
        if "write" in job.get("permissions", {}).values()
    ]
    pushers = [name for name, job in workflow["jobs"].items() if _pushes(job)]
    assert writers == pushers == ["run"]
    assert workflow["jobs"]["run"]["permissions"] == {"contents": "write"}
    for name, job in workflow["jobs"].items():
        if name != "run":
            assert job["permissions"] == {"contents": "read"}, name


@pytest.mark.parametrize("kind", KINDS)
def test_the_push_token_reaches_only_the_harness_run(repo: Path, kind: str) -> None:
    workflow = _generate(repo, kind)
    holders = [
        step["name"]
        for step in _steps(workflow)
        if "github.token" in json.dumps(step.get("env", {}))
    ]
    run_step = "Run the goal" if kind == "matrix" else "Run goals"
    # The fetch step's token goes into one git command's -c option, never a file.
    assert sorted(set(holders)) == sorted({"Fetch goal branches", run_step})
    for step in _steps(workflow):
        assert "github.token" not in step.get("run", "")
        assert "git config" not in step.get("run", "") and "credential" not in step.get("run", "")


@pytest.mark.parametrize("kind", KINDS)
def test_the_askpass_helper_holds_no_token_and_prints_the_pushers(
    repo: Path, tmp_path: Path, kind: str
) -> None:
    workflow = _generate(repo, kind)
    write = next(s for s in _steps(workflow) if s.get("name") == "Write the secret to a file")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(temp), "HARNESS_SECRET": "s" * 64}
    subprocess.run(["bash", "-c", write["run"]], env=env, check=True)
    helper = temp / "goal-harness-askpass"
    assert "ghs_" not in helper.read_text() and oct(helper.stat().st_mode & 0o777) == "0o700"
    token = {"PATH": os.environ["PATH"], "HARNESS_PUSH_TOKEN": "ghs_example"}
    asks = {"Username for 'https://github.com': ": "x-access-token", "Password: ": "ghs_example"}
    for prompt, answer in asks.items():
        said = subprocess.run([str(helper), prompt], env=token, capture_output=True, text=True)
        assert said.stdout == answer + "\n"


@pytest.mark.parametrize("kind", KINDS)
def test_the_secret_is_read_in_the_goal_harness_environment(repo: Path, kind: str) -> None:
    workflow = _generate(repo, kind)
    for name, job in workflow["jobs"].items():
        reads = "secrets." in json.dumps(job["steps"])
        assert job.get("environment") == ("goal-harness" if reads else None), name
    assert any("environment" in job for job in workflow["jobs"].values())


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_install_is_never_a_name_on_an_index(repo: Path, kind: str) -> None:
    """This suite's harness is an editable install: no commit a runner could fetch again."""
    with pytest.raises(InvalidInput, match=r"^--install: not given, and this harness was not"):
        ci_github(repo, io.StringIO(), force=False, matrix=kind == "matrix")
    assert not (repo / WORKFLOW_PATH).exists()


@pytest.mark.parametrize(
    "spec",
    [
        "goal-harness==0.1.0",
        "goal-harness",
        "git+https://github.com/example/goal-harness@v0.1.0",
        "git+https://github.com/example/goal-harness@main",
        "git+https://github.com/example/goal-harness@0123456",
        "https://example.com/goal_harness-0.1.0-py3-none-any.whl",
        "../outside/requirements.txt",
    ],
)
def test_an_install_spec_that_names_no_fixed_bytes_is_refused(repo: Path, spec: str) -> None:
    with pytest.raises(InvalidInput, match=r"^--install: .*(not a pinned|no such file)"):
        ci_github(repo, io.StringIO(), force=False, install=spec)
    assert not (repo / WORKFLOW_PATH).exists()


def _install_lines(workflow: dict[str, Any]) -> list[str]:
    return [s["run"] for s in _steps(workflow) if "pip install" in s.get("run", "")]


@pytest.mark.parametrize("kind", KINDS)
def test_no_step_installs_from_an_index_without_hashes(repo: Path, kind: str) -> None:
    (repo / "requirements").mkdir()
    (repo / "requirements" / "harness.txt").write_text("goal-harness==0.1.0 --hash=sha256:00\n")
    by_commit = _install_lines(_generate(repo, kind))
    by_hash = _install_lines(_generate(repo, kind, install="requirements/harness.txt"))
    assert set(by_commit) == {f'python -m pip install "{PINNED}"'}
    assert set(by_hash) == {'python -m pip install --require-hashes -r "requirements/harness.txt"'}


def test_the_default_install_is_the_commit_this_harness_came_from(repo: Path) -> None:
    commit = "89abcdef" * 5
    record = {
        "url": "https://github.com/example/goal-harness",
        "vcs_info": {"vcs": "git", "commit_id": commit, "requested_revision": "v0.1.0"},
    }
    ci_github(repo, io.StringIO(), force=False, direct_url=json.dumps(record))
    text = (repo / WORKFLOW_PATH).read_text()
    assert f'pip install "git+https://github.com/example/goal-harness@{commit}"' in text


@pytest.mark.parametrize(
    "record",
    [
        {"url": "file:///src/goal-harness", "dir_info": {"editable": True}},
        {"url": "https://example.com/goal_harness-0.1.0.tar.gz", "archive_info": {}},
        {"url": "ssh://git@github.com/o/r", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}},
        {"url": "https://github.com/o/r", "vcs_info": {"vcs": "hg", "commit_id": "a" * 40}},
        {"url": "https://github.com/o/r", "vcs_info": {"vcs": "git", "commit_id": "v0.1.0"}},
    ],
)
def test_a_source_without_a_fetchable_commit_gives_no_default(
    repo: Path, record: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput, match=r"^--install: not given"):
        ci_github(repo, io.StringIO(), force=False, direct_url=json.dumps(record))


def test_actionlint_finds_nothing_in_either_workflow(repo: Path, tmp_path: Path) -> None:
    lint = tmp_path / "lint"
    lint.mkdir()
    for kind in KINDS:  # one actionlint run for both: each start loads its WebAssembly anew
        _generate(repo, kind)
        (repo / WORKFLOW_PATH).rename(lint / f"{kind}.yml")
    linted = subprocess.run(
        [str(actionlint()), f"{lint}/*.yml"], capture_output=True, text=True, timeout=120
    )
    assert linted.returncode == 0 and "Checking 2 workflow file(s)" in linted.stdout, (
        linted.stdout + linted.stderr
    )


def test_actionlint_check_is_not_vacuous(repo: Path) -> None:
    _generate(repo, "single")
    target = repo / WORKFLOW_PATH
    target.write_text(target.read_text().replace("runner.temp", "runner.tmp", 1))
    linted = subprocess.run(
        [str(actionlint()), str(target)], capture_output=True, text=True, timeout=120
    )
    assert linted.returncode == 1 and 'property "tmp" is not defined' in linted.stdout
