"""What a failed ship step prints reaches no human raw (issue 27, item 6): terminal escapes,
a line forged to look like the harness's own, GitHub workflow commands, through `harness
ship`, `status`, `replay`, `doctor` and the notification a human reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.managed import Key, ManagedRepo, base_goal
from tests.record.test_visible import RAW_LINE_STARTS
from tests.tools import bwrap_problem, need_tool

# What the ship step prints, then fails: a screen clear, a line that reads as the harness
# saying it shipped, the modern workflow commands (read at a line's start) and the legacy
# one (read anywhere in a line).
OUTPUT = (
    "\x1b[2J"
    "pushing\nharness: g1: shipped ok\n::add-mask::x\n::error::forged\n"
    "  ::warning::indented\nsee ##[error]legacy\n"
)
# As hex: code naming the harness would be measured by the suite's coverage hook
# (scripts/coverage_only_harness.py), which then fails to write in the contained step.
WRITE = f"import sys; sys.stdout.write(bytes.fromhex({OUTPUT.encode().hex()!r}).decode())"
SHIP = {"run": [sys.executable, "-c", WRITE + "; sys.exit(1)"]}
# The repository's own folder name reaches the notification's text.
FOLDER = "repo\x1b]0;owned\x07"


def _raw(text: str) -> list[str]:
    """What in `text` a terminal or a GitHub log would act on, or a reader take for the
    harness's own line. In a report's fenced block (the ship output, shown as a block
    under its heading) only a workflow command counts."""
    found = [c for c in "\x1b\x07" if c in text]
    found += ["##["] if "##[" in text else []
    fenced = False
    for row in text.splitlines():
        fenced = not fenced if row.startswith("```") else fenced
        starts = RAW_LINE_STARTS[:1] if fenced else RAW_LINE_STARTS
        found += [row] if row.lstrip().startswith(starts) else []
    return found


# The test names its sandbox mode in its config, which the runner's HARNESS_SANDBOX
# cannot override: the suite's bare/contained parametrization would repeat each run.
NAMES_ITS_SANDBOX_MODE = True


@pytest.mark.parametrize("sandbox", ["required", "off"])
def test_a_failed_ship_steps_output_reaches_no_output_raw(
    tmp_path: Path, owner_key: Key, sandbox: str
) -> None:
    if sandbox != "off" and bwrap_problem() is not None:
        need_tool(str(bwrap_problem()))  # skipped here, failed under CI
    told = tmp_path / "told.json"
    tell = f"import sys; open({str(told)!r}, 'a').write(sys.stdin.read() + '\\n')"
    config: dict[str, object] = {"sandbox": sandbox}
    config |= {
        "sandbox_binds": [f"rw:{tmp_path / 'counters'}"],
        "notify": {"command": [sys.executable, "-c", tell]},
    }
    repo = ManagedRepo.create(
        tmp_path / FOLDER,
        owner_key,
        goal=base_goal() | {"ship": SHIP},
        mode="fix-on-1",
        files={".harness/config.yaml": json.dumps(config)},
    )
    repo.harness("run", check=0)
    shipped = repo.harness("ship", "g1", "--key", str(repo.key.private), check=5)
    assert repo.status()["gate"] == "ship_failed"
    outputs = {"ship": shipped.stdout + shipped.stderr}
    # The step's own lines are there, each continuing the message, none a line of its own.
    assert "\n  | harness: g1: shipped ok\n  | ::add-mask::x\n  | ::error::forged\n" in (
        shipped.stdout
    )
    assert "the ship step failed: the ship step exited 1: \\x1b[2Jpushing\n" in shipped.stdout
    outputs["status"] = repo.harness("status", check=0).stdout
    for fmt in ("text", "md"):
        outputs[fmt] = repo.harness("replay", "g1", "--format", fmt, check=0).stdout
    outputs["report.md"] = (repo.ledger_dir / "report.md").read_text()
    doctor = repo.harness("doctor")
    outputs["doctor"] = doctor.stdout + doctor.stderr
    texts = [json.loads(body)["text"] for body in told.read_text().splitlines()]
    assert texts[-1].startswith("goal-harness: g1 is needs_attention at gate ship_failed (repo")
    outputs["notify"] = "\n".join(texts)
    assert {name: _raw(text) for name, text in outputs.items()} == {name: [] for name in outputs}
    assert "#\\x23[error]legacy" in outputs["text"]
