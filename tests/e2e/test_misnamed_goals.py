"""Goal files whose names are not goal ids: reported with the name escaped, never run."""

from __future__ import annotations

import json

from tests.managed import ManagedFactory, git

FORGED = "z\nharness: z: ok, every goal approved \x1b[32mOK\x1b[0m\nq"


def test_misnamed_goal_files_are_named_safely_and_never_run_or_locked(
    managed: ManagedFactory,
) -> None:
    repo = managed()
    for stem in (FORGED, "Fix Login", "café"):
        (repo.root / "goals" / f"{stem}.yaml").write_text("version: 1\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "misnamed goal files")

    run = repo.harness("run", "--max-steps", "1")
    assert run.returncode == 2
    assert "\x1b" not in run.stderr and "\x1b" not in run.stdout
    assert not any(line.startswith("harness: z:") for line in run.stderr.splitlines())
    assert "'Fix Login': error: goals/'Fix Login.yaml': the file name is not a goal id" in (
        run.stderr
    )
    assert repo.count("build") == ["1"]  # the real goal still ran its step
    locks = sorted(p.name for p in (repo.root / ".git" / "harness" / "locks").iterdir())
    assert all(name.startswith("g1.") for name in locks), locks

    as_json = json.loads(repo.harness("run", "--json", "--max-steps", "1").stdout)
    assert {g["id"] for g in as_json["goals"]} == {FORGED, "Fix Login", "café", "g1"}

    status = repo.harness("status", check=0)
    assert [line.split()[0] for line in status.stdout.splitlines()] == ["g1"]

    check = repo.harness("check")
    assert check.returncode == 2 and "\x1b" not in check.stdout
    assert "goals/'Fix Login.yaml': id: 'Fix Login' is not a valid goal id" in check.stdout
    assert not any(line.startswith("harness: z:") for line in check.stdout.splitlines())

    assert repo.harness("verify", check=0).stdout.startswith("ok g1: ")
