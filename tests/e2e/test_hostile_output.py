"""Nothing a step prints reaches a human raw (issue 13, done-when 6): a failing test id
with OSC and CSI sequences, bidi overrides and line separators, through `run`, `status`,
`replay` in every format, report.md and the HTML page."""

from __future__ import annotations

import sys

from tests.managed import ManagedFactory, base_goal

# The id has no whitespace (the pytest summary's id stops at one); it carries an OSC title,
# an OSC 8 hyperlink, the 8-bit CSI, a bidi override and isolate, and the line separators.
HOSTILE_ID = (
    "tests/t.py::t\x1b]0;owned\x07\x1b]8;;http://evil\x1b\\x\x9b31m\u202egnp.exe\u2066\u2028"
    "g2\u2029completed\x85"
)
JUDGE = f"import sys\nprint('FAILED ' + {HOSTILE_ID!r} + ' - boom')\nsys.exit(1)\n"
RAW = set(HOSTILE_ID) - set("tests/t.py::t]0;owned]8;;http://evil\\x31mgnp.exeg2completed")


def test_hostile_test_id_reaches_no_output_raw(managed: ManagedFactory) -> None:
    goal = base_goal() | {"judge": {"run": [sys.executable, "hostile_judge.py"]}}
    repo = managed(goal=goal, mode="fix-on-1", files={"hostile_judge.py": JUDGE})
    run = repo.harness("run", "--max-steps", "2", check=0)
    outputs = {"run": run.stdout + run.stderr}
    outputs["status"] = repo.harness("status", check=0).stdout
    for fmt in ("text", "md", "json", "html"):
        outputs[fmt] = repo.harness("replay", "g1", "--format", fmt, check=0).stdout
    outputs["report.md"] = (repo.ledger_dir / "report.md").read_text()
    assert "failing=tests/t.py::t\\x1b]0;owned\\x07" in outputs["status"]
    for name, text in outputs.items():
        assert not RAW & set(text), (name, sorted(RAW & set(text)))
        assert "\ng2" not in text, name
    assert outputs["status"].count("\n") == 1
