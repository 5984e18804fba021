"""Issue 17, warn first, then block: owners' destructive rules with `enforce: warn`."""

from __future__ import annotations

import json
import sys

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal


def _config(enforce: str | None) -> dict[str, str]:
    rule: dict[str, object] = {"class": "payments", "paths": ["value.txt"]}
    if enforce is not None:
        rule["enforce"] = enforce
    return {".harness/config.yaml": json.dumps({"destructive": [rule]})}


def _events(repo: ManagedRepo, kind: str) -> list[dict[str, object]]:
    lines = (repo.ledger_dir / "events" / "000001.jsonl").read_text().splitlines()
    return [e["e"] for e in map(json.loads, lines) if e["e"]["type"] == kind]


def test_a_warn_rule_records_a_warning_and_the_goal_completes(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-1", files=_config("warn"))
    ran = repo.harness("run", check=0)
    builds = [e for e in _events(repo, "step.finished") if e["step"] == "build"]
    warned = builds[0]["data"]["warned"]  # type: ignore[index]
    assert warned == ["value.txt: added file (config:0)"], warned
    assert "destructive_classes" not in builds[0]["data"]  # type: ignore[operator]
    assert " warned=1 (value.txt: added file (config:0))" in ran.stdout
    row = repo.status()
    assert (row["status"], row["gate"], row["warned"]) == ("completed", None, warned)
    line = repo.harness("status", check=0).stdout
    assert "warned=1 (value.txt: added file (config:0); enforce: warn, not a gate)" in line
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")


@pytest.mark.parametrize("enforce", ["block", None])
def test_the_same_rule_blocking_parks(managed: ManagedFactory, enforce: str | None) -> None:
    repo = managed(mode="fix-on-1", files=_config(enforce))
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["gate"], row["warned"]) == (
        "parked_at_eyes",
        "destructive:payments",
        [],
    )


def test_a_built_in_class_set_to_warn_is_invalid_config(managed: ManagedFactory) -> None:
    config = json.dumps({"destructive": [{"class": "payments", "enforce": "warn"}]})
    repo = managed(mode="fix-on-1", files={".harness/config.yaml": config}, approve=False)
    checked = repo.harness("check", check=2)
    assert (
        ".harness/config.yaml: destructive[0].enforce: 'warn' with neither paths nor lines "
        "would make the built-in class payments warn (expected block: the eight built-in "
        "classes always block; warn only on a rule's own paths or lines)"
    ) in checked.stdout + checked.stderr
    assert "Traceback" not in checked.stderr


def _failing_lesson(enforce: str | None) -> dict[str, str]:
    """A lesson every build of the base goal is given, whose check always fails."""
    extra = f"  enforce: {enforce}\n" if enforce else ""
    run = json.dumps([sys.executable, "-c", "raise SystemExit(1)"])
    text = (
        "version: 1\nwhen:\n  keywords: [value]\ntext: |\n  Keep the value right.\n"
        f"check:\n  run: {run}\n{extra}"
    )
    return {"lessons/strict.yaml": text}


def test_a_lesson_check_with_warn_records_a_warning_and_completes(
    managed: ManagedFactory,
) -> None:
    repo = managed(mode="fix-on-1", files=_failing_lesson("warn"))
    ran = repo.harness("run", check=0)
    (checked,) = _events(repo, "lesson.checked")
    assert checked["data"]["warned"] is True and checked["data"]["passed"] is False  # type: ignore[index]
    assert "lesson strict check failed (warned: enforce: warn, not a gate)" in ran.stdout
    assert _events(repo, "done.blocked") == []
    row = repo.status()
    assert (row["status"], row["warned"]) == ("completed", ["lesson:strict check failed"])
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")


def test_the_same_lesson_check_blocking_blocks_the_done_gate(managed: ManagedFactory) -> None:
    goal = base_goal() | {"budget": {"max_iterations": 1}}
    repo = managed(mode="fix-on-1", goal=goal, files=_failing_lesson("block"))
    repo.harness("run", check=0)
    (blocked, *_) = _events(repo, "done.blocked")
    assert blocked["data"]["lessons_failed"] == ["strict"]  # type: ignore[index]
    assert repo.status()["status"] != "completed"
