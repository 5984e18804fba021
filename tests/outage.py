"""A model API outage, as a real agent shows it: a script that prints what Claude Code 2.1.332
really printed (captured by the research spike against a scripted server, in
tests/data/unavailable/: `claude-529.out` after 11 requests answered 529, `claude-429.out`
with 429 on every call, `claude-ok.out` a run that edited files), read by the real
claude-json parser.

The script takes its next outcome from `outcomes.txt` in the counters folder (outside the
repository), one per build: `529`, `429` or `ok` (the default when none is left).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.managed import ManagedRepo, base_goal

CAPTURES = Path(__file__).resolve().parent / "data" / "unavailable"
MESSAGE_529 = json.loads((CAPTURES / "claude-529.out").read_text())["result"]
MESSAGE_429 = json.loads((CAPTURES / "claude-429.out").read_text())["result"]

AGENT = r"""
import os, sys
from pathlib import Path
counters = Path(os.environ["TEST_COUNTER_DIR"])
plan = counters / "outcomes.txt"
lines = plan.read_text().split() if plan.exists() else []
outcome = lines[0] if lines else "ok"
plan.write_text("".join(line + "\n" for line in lines[1:]))
with (counters / "build.log").open("a") as f:
    f.write(os.environ["HARNESS_ITERATION"] + "\n")
sys.stdin.read()
captured = Path(os.environ["TEST_CAPTURES"], f"claude-{outcome}.out").read_text()
if outcome == "ok":
    Path("value.txt").write_text("right\n")
    sys.stdout.write(captured)
    sys.exit(0)
# Work done before the API failed (claude can fail after some turns): kept, not the agent's result.
Path("partial.txt").open("a").write(outcome + "\n")
sys.stdout.write(captured)
sys.exit(1)
"""


def outage_goal(tries: int = 3, backoff: str = "60s") -> dict[str, Any]:
    build = {"run": [sys.executable, "claude_agent.py"], "timeout": "60s", "format": "claude-json"}
    halt = {"no_progress_passes": 2, "max_passes": 50}
    return base_goal() | {
        "build": build,
        "halt": halt | {"unavailable_tries": tries, "unavailable_backoff": backoff},
    }


def outage_files() -> dict[str, str]:
    return {"claude_agent.py": AGENT}


def plan_outcomes(repo: ManagedRepo, *outcomes: str) -> None:
    """The next builds' outcomes, in order; after them every build is `ok`."""
    repo.env["TEST_CAPTURES"] = str(CAPTURES)
    (repo.counters / "outcomes.txt").write_text("".join(o + "\n" for o in outcomes))
