"""Each owner rule's hits and warned counts over a goal's record (issue 17, "warn first").

An owner rule is a config destructive rule (`config:<index>`) or a lesson's check
(`lesson:<name>`). The unit is a check that fired: a build whose change the rule hit, a
`goal.started`/`goal.revised` whose declared commands it hit, a lesson check that failed;
as a blocking rule it counts in `hits`, as an `enforce: warn` rule in `warned`. Kept in the
cell by the fold, so `status` reads them without the ledger (docs/specs/destructive.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from harness.record.cell import MAX_RULE_COUNTS, Cell, RuleCount

# A recorded hit line ends with its rule id: `value.txt: added file (config:0)`.
_CONFIG_RULE_RE = re.compile(r"\((config:[0-9]{1,9})\)\Z")


def fired_rules(data: Mapping[str, Any], hit_key: str | None, warned_key: str) -> dict[str, str]:
    """The config rules a check fired, rule -> "hit" or "warned": the event's `owner_rules`
    (exact), else, for an event recorded before it was kept, the rule ids its recorded
    hit lines end with (`hit_key`: blocking, `warned_key`: warn)."""
    exact = data.get("owner_rules")
    if isinstance(exact, dict):
        return {str(k): v for k, v in exact.items() if v in ("hit", "warned")}
    fired: dict[str, str] = {}
    for key, how in ((hit_key, "hit"), (warned_key, "warned")):
        lines = data.get(key) if key else None
        for line in lines if isinstance(lines, list) else ():
            found = _CONFIG_RULE_RE.search(line) if isinstance(line, str) else None
            if found:
                fired[found[1]] = how
    return fired


def counted(cell: Cell, fired: Mapping[str, str]) -> Cell:
    """The cell with one more check for each rule in `fired`."""
    counts = {c.rule: [c.hits, c.warned] for c in cell.rule_counts or ()}
    for rule, how in fired.items():
        if rule not in counts and len(counts) >= MAX_RULE_COUNTS:
            continue  # bounded: a goal counts the first MAX_RULE_COUNTS rules that fire
        counts.setdefault(rule, [0, 0])[0 if how == "hit" else 1] += 1
    return replace(cell, rule_counts=_sorted(counts.items()))


def _sorted(items: Iterable[tuple[str, list[int]]]) -> tuple[RuleCount, ...]:
    return tuple(RuleCount(rule, hits, warned) for rule, (hits, warned) in sorted(items))
