"""Issue 17, a terminal-state assertion: `expect.globs` counts files by glob at the done gate."""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from tests.managed import ManagedFactory, ManagedRepo, base_goal

# A build that fixes value.txt and, from iteration `argv[1]` on (0: never), writes a digest.
DIGEST_AGENT = r"""
import os, sys
from pathlib import Path
Path("value.txt").write_text("right\n")
start = int(sys.argv[1])
iteration = int(os.environ["HARNESS_ITERATION"])
Path(os.environ["TEST_COUNTER_DIR"], f"prompt-{iteration}.txt").write_text(sys.stdin.read())
if start and iteration >= start:
    Path("digest").mkdir(exist_ok=True)
    Path("digest", f"day-{iteration}.md").write_text("# the digest\n")
"""


def _goal(digest_from: int, globs: list[dict[str, Any]], iterations: int = 1) -> dict[str, Any]:
    goal = base_goal() | {"budget": {"max_iterations": iterations}}
    goal["build"] = {"run": [sys.executable, "digest_agent.py", str(digest_from)], "timeout": "60s"}
    return goal | {"expect": {"globs": globs}}


def _repo(
    managed: ManagedFactory, digest_from: int, globs: list[dict[str, Any]], **kw: Any
) -> ManagedRepo:
    files = {"digest_agent.py": DIGEST_AGENT} | kw.pop("files", {})
    return managed(goal=_goal(digest_from, globs, **kw), files=files)


def _blocked(repo: ManagedRepo) -> list[dict[str, Any]]:
    lines = (repo.ledger_dir / "events" / "000001.jsonl").read_text().splitlines()
    events = [e["e"] for e in map(json.loads, lines)]
    return [e["data"] for e in events if e["type"] == "done.blocked"]


SHORT = "expect.globs[0]: digest/*.md matched 0 files (expected at least 1)"
SHORT_NEW = "expect.globs[0]: digest/*.md matched 0 new files (expected at least 1)"


def test_a_build_that_writes_no_digest_is_blocked(managed: ManagedFactory) -> None:
    repo = _repo(managed, 0, [{"glob": "digest/*.md", "min": 1}])
    ran = repo.harness("run", check=0)
    (blocked,) = _blocked(repo)
    assert (blocked["missing"], blocked["expect_short"], blocked["detail"]) == ([], [SHORT], SHORT)
    assert f"done gate blocked: {SHORT}" in ran.stdout
    row = repo.status()
    assert (row["status"], row["gate"], row["failing_test"]) == (
        "needs_attention",
        "budget_exhausted",
        SHORT,
    )
    assert repo.harness("verify", "g1", check=0).stdout.startswith("ok g1: ")


def test_a_build_that_writes_one_completes(managed: ManagedFactory) -> None:
    repo = _repo(managed, 1, [{"glob": "digest/*.md", "min": 1, "max": 1, "new": True}])
    repo.harness("run", check=0)
    assert _blocked(repo) == []
    assert repo.status()["status"] == "completed"


def test_a_shortfall_is_a_repair_round_told_to_the_next_build(managed: ManagedFactory) -> None:
    repo = _repo(managed, 2, [{"glob": "digest/**", "new": True}], iterations=3)
    repo.harness("run", check=0)
    short = "expect.globs[0]: digest/** matched 0 new files (expected at least 1)"
    assert [b["expect_short"] for b in _blocked(repo)] == [[short]]
    prompt = (repo.counters / "prompt-2.txt").read_text()
    assert f"Failing: {short}" in prompt
    assert "When you are done, at least 1 new files must match digest/**" in prompt
    row = repo.status()
    assert (row["status"], row["iteration"]) == ("completed", 2)


def test_new_does_not_count_a_file_already_on_main(managed: ManagedFactory) -> None:
    on_main = {"digest/old.md": "# yesterday\n"}
    repo = _repo(managed, 0, [{"glob": "digest/*.md", "new": True}], files=on_main)
    repo.harness("run", check=0)
    assert [b["expect_short"] for b in _blocked(repo)] == [[SHORT_NEW]]


def test_without_new_a_file_already_on_main_counts(managed: ManagedFactory) -> None:
    on_main = {"digest/old.md": "# yesterday\n"}
    repo = _repo(managed, 0, [{"glob": "digest/*.md"}], files=on_main)
    repo.harness("run", check=0)
    assert repo.status()["status"] == "completed"


def test_a_maximum_and_the_harness_own_files(managed: ManagedFactory) -> None:
    # `**` never counts ledger/ or .harness/ files, and `max` bounds the count from above.
    globs = [{"glob": "**/*.md", "min": 0, "max": 0}, {"glob": "**/*.json", "max": 1}]
    repo = _repo(managed, 1, globs)
    repo.harness("run", check=0)
    (blocked,) = _blocked(repo)
    assert blocked["expect_short"] == [
        "expect.globs[0]: **/*.md matched 1 file (expected at most 0)",
        "expect.globs[1]: **/*.json matched 0 files (expected at least 1)",
    ]


def test_bad_values_are_invalid_input_naming_file_key_and_expected(
    managed: ManagedFactory,
) -> None:
    repo = managed(goal=base_goal(), approve=False)

    def check(expect: object) -> str:
        goal = base_goal() | {"expect": expect}
        (repo.root / "goals" / "g1.yaml").write_text(yaml.safe_dump(goal, sort_keys=False))
        checked = repo.harness("check", check=2)
        assert "Traceback" not in checked.stderr
        return checked.stdout + checked.stderr

    out = check({"globs": [{"glob": "digest/*.md", "min": 2, "max": 1}]})
    assert (
        "goals/g1.yaml: expect.globs[0].max: 1 is less than min 2 (expected a whole number "
        "at least min (2))"
    ) in out
    out = check({"globs": [{"glob": "ledger/**"}]})
    assert (
        "goals/g1.yaml: expect.globs[0].glob: 'ledger/**' is under the harness's own ledger/" in out
    )
    out = check({"globs": [{"glob": "../x/*.md"}]})
    assert "goals/g1.yaml: expect.globs[0].glob: '../x/*.md' leaves the repository" in out
    out = check({"globs": [{"glob": "a/*", "min": -1}]})
    assert "goals/g1.yaml: expect.globs[0].min: " in out and "from 0 to 1000000000" in out
    out = check({"globs": [{"glob": "a/*", "count": 1}]})
    assert "goals/g1.yaml: expect.globs[0]" in out and "count" in out
