"""What a step's denied connection does to its goal (docs/specs/sandbox.md, "Egress by
name"): by itself nothing, the step's result stands; with `halt.on_denied_egress: park` the
goal parks at `egress_denied` once the step's result is recorded, unless that result has
already stopped it at another gate. A signed `harness unpark` crosses it; a new goal version
does not (a gate about what a step did, record/revision.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.loop.recorder import Recorder
from harness.model.limits import Halt
from harness.record.egress import denied_detail
from harness.record.events import TERMINAL, WAITING


def park_on_denied(
    rec: Recorder, halt: Halt, step: str, iteration: int, egress: Mapping[str, Any] | None
) -> bool:
    """Park the goal at egress_denied when the step was denied a connection and the goal
    says so; whether it did."""
    if egress is None or halt.on_denied_egress != "park":
        return False
    if rec.cell.status in TERMINAL | WAITING:
        return False
    detail = denied_detail(step, iteration, egress)
    if detail is None:
        return False
    rec.gate("parked_at_eyes", "egress_denied", detail)
    return True
