"""Issue 17, warn first, then block: owners' destructive rules with `enforce: warn`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
        "would make the built-in class payments warn (expected block: the ten built-in "
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


def test_a_warn_rule_hit_twice_counts_warned_2_in_status_and_the_reports(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    # fix-on-2: both builds write value.txt, so the warn rule fires in each of them.
    files = _config("warn") | _failing_lesson("warn")
    repo = managed(mode="fix-on-2", files=files)
    repo.harness("run", check=0)
    row = repo.status()
    assert (row["status"], row["iteration"]) == ("completed", 2)
    counts = {"config:0": {"hits": 0, "warned": 2}, "lesson:strict": {"hits": 0, "warned": 1}}
    assert row["rules"] == counts
    shown = "config:0 hits 0 warned 2; lesson:strict hits 0 warned 1"
    assert f"| owner rules | {shown} |" in (repo.ledger_dir / "report.md").read_text()
    site = tmp_path / "site"
    repo.harness("report", "g1", "--out", str(site), check=0)
    page = (site / "g1.html").read_text()
    assert (
        '<code>config:0</code> hits <span class="num">0</span> warned <span class="num">2</span>'
        in page
    )
    replayed = json.loads(repo.harness("replay", "g1", "--format", "json", check=0).stdout)
    assert replayed["state"]["rule_counts"] == counts
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")


def test_a_blocking_rule_counts_its_hit(managed: ManagedFactory) -> None:
    repo = managed(mode="fix-on-1", files=_config("block"))
    repo.harness("run", check=0)
    assert repo.status()["rules"] == {"config:0": {"hits": 1, "warned": 0}}


@pytest.mark.parametrize("enforce", ["warn", "block"])
def test_a_rule_hit_by_a_declared_command_is_counted(managed: ManagedFactory, enforce: str) -> None:
    rule = {"class": "payments", "lines": ["judge\\.py"], "enforce": enforce}
    config = {".harness/config.yaml": json.dumps({"destructive": [rule]})}
    repo = managed(mode="fix-on-1", files=config)
    repo.harness("run", check=0)
    how = "warned" if enforce == "warn" else "hit"
    (started,) = _events(repo, "goal.started")
    assert started["data"]["owner_rules"] == {"config:0": how}  # type: ignore[index]
    # The declared judge command, once (no build changes judge.py; a blocking rule parks
    # the goal before its first build).
    row = repo.status()
    assert row["rules"] == {"config:0": {"hits": int(how == "hit"), "warned": int(how == "warned")}}
    assert row["status"] == ("completed" if enforce == "warn" else "parked_at_eyes")


def test_a_cell_written_before_counts_were_kept_still_loads(managed: ManagedFactory) -> None:
    """A cell without `rule_counts` (written before them) is compared with the fold
    without that field; the folded cell then carries the counts (cell.md)."""
    from harness.record.cell import _mac, parse_cell
    from harness.record.hydrate import GoalPaths, load
    from harness.store.fsutil import canonical_json
    from harness.trust.secret import Secret
    from tests.managed import SECRET

    repo = managed(mode="fix-on-2", files=_config("warn"))
    repo.harness("run", check=0)
    key = Secret(SECRET.encode()).goal_key("g1")
    paths = GoalPaths(repo.worktree, "g1")
    cell = parse_cell(paths.cell.read_bytes(), "state.json", "g1", key)
    body = {"v": 1, **cell.to_dict()}
    del body["rule_counts"]
    mac = _mac(key, "g1", canonical_json(body))
    paths.cell.write_bytes(canonical_json({**body, "mac": mac}) + b"\n")
    old = parse_cell(paths.cell.read_bytes(), "state.json", "g1", key)
    assert old.rule_counts is None and old.status == "completed"
    loaded = load(paths, key, None, repair=False, report=False)
    assert [tuple(c) for c in loaded.cell.rule_counts or ()] == [("config:0", 0, 2)]
