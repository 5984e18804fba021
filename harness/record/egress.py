"""What a step with an allowlist reached, in words, from its `step.finished` data alone
(docs/specs/sandbox.md, "Egress by name"): the run's line and the replay
(`egress: 3 allowed, 1 denied: evil.example`), report.md's and the HTML page's table per
step, `harness diff --stat`.

The data came from the ledger, so it is read as untrusted JSON; every host is the step's
own string: each is shown through the one sanitiser by whoever prints it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.record.ledger import Record
from harness.record.visible import line, one_line

SHOWN_DENIED = 3  # hosts named in the one-line summary
_HEX_OR_COLON = "0123456789abcdefABCDEF:."


@dataclass(frozen=True)
class Attempt:
    """One recorded destination, its verdict and traffic, as the reports show it."""

    host: str
    port: int
    verdict: str
    count: int
    sent: int
    received: int
    failed: int = 0
    why: str = ""

    @property
    def where(self) -> str:
        """`host:port`, an IPv6 address in brackets; `host` alone for a port-less entry."""
        v6 = ":" in self.host and not self.host.strip(_HEX_OR_COLON)
        host = f"[{self.host}]" if v6 else self.host
        return one_line(f"{host}:{self.port}" if self.port else host)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def attempts(data: Mapping[str, Any]) -> list[Attempt] | None:
    """The step's recorded destinations; None when the step had no allowlist (or the record
    is older than egress by name)."""
    raw = data.get("egress")
    if not isinstance(raw, list):
        return None
    found = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        found.append(
            Attempt(
                host=str(entry.get("host", "")),
                port=_count(entry.get("port")),
                verdict="denied" if entry.get("verdict") == "denied" else "allowed",
                count=_count(entry.get("count")),
                sent=_count(entry.get("sent")),
                received=_count(entry.get("received")),
                failed=_count(entry.get("failed")),
                why=str(entry.get("why") or ""),
            )
        )
    return found


def more(data: Mapping[str, Any]) -> dict[str, int]:
    """The tries past the itemised destinations, per verdict."""
    raw = data.get("egress_more")
    if not isinstance(raw, dict):
        return {}
    return {verdict: _count(raw.get(verdict)) for verdict in ("allowed", "denied")}


def totals(data: Mapping[str, Any]) -> tuple[int, int, list[str]]:
    """(allowed tries, denied tries, the denied destinations in order)."""
    found = attempts(data) or []
    extra = more(data)
    allowed = sum(a.count for a in found if a.verdict == "allowed") + extra.get("allowed", 0)
    denied = sum(a.count for a in found if a.verdict == "denied") + extra.get("denied", 0)
    names = list(dict.fromkeys(a.host for a in found if a.verdict == "denied"))
    return allowed, denied, names


def summary(data: Mapping[str, Any]) -> str | None:
    """`egress: 3 allowed, 1 denied: evil.example`; None for a step without an allowlist."""
    if attempts(data) is None:
        return None
    error = data.get("egress_error")
    if error:
        return f"egress: not recorded ({one_line(error)})"
    allowed, denied, names = totals(data)
    if not allowed and not denied:
        return "egress: none"
    text = f"egress: {allowed} allowed"
    if denied:
        shown = ", ".join(one_line(name) for name in names[:SHOWN_DENIED])
        text += f", {denied} denied" + (f": {shown}" if shown else "")
        text += ", …" if len(names) > SHOWN_DENIED else ""
    return text


def denied_detail(step: str, iteration: int, data: Mapping[str, Any]) -> str | None:
    """The egress_denied gate's detail, or None when nothing was denied."""
    found = [a for a in attempts(data) or [] if a.verdict == "denied"]
    extra = more(data).get("denied", 0)
    if not found and not extra:
        return None
    listed = "; ".join(f"{a.where} ×{a.count} ({one_line(a.why)})" for a in found[:10])
    if len(found) > 10 or extra:
        listed += "; and more"
    return f"{step}[{iteration}] tried to reach what its network allowlist does not name: {listed}"


def table_rows(data: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(destination, verdict, tries, bytes sent, bytes received) per recorded destination,
    the tries past those last."""
    rows = []
    for a in attempts(data) or []:
        verdict = a.verdict + (f", {a.failed} failed" if a.failed else "")
        verdict += f" ({one_line(a.why)})" if a.why else ""
        rows.append((a.where, verdict, str(a.count), str(a.sent), str(a.received)))
    for verdict, count in more(data).items():
        if count:
            rows.append(("(not itemised)", verdict, str(count), "", ""))
    return rows


def markdown(label: str, data: Mapping[str, Any]) -> str:
    """A step's egress as a report.md table under `label` (empty for no allowlist)."""
    if attempts(data) is None:
        return ""
    said = (summary(data) or "").removeprefix("egress: ")
    head = f"Egress of {one_line(label)}: {said}\n\n".replace("|", "\\|")
    rows = table_rows(data)
    if not rows:
        return head
    lines = ["| destination | verdict | tries | sent | received |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return head + "\n".join(lines) + "\n"


def stat_lines(records: Iterable[Record], iteration: int | None) -> list[str]:
    """`harness diff --stat`'s lines after git's: each step with an allowlist (of build
    `iteration`'s round, or of the whole goal) and what it reached."""
    found = []
    for record in records:
        event = record.event
        if event.type != "step.finished" or iteration not in (None, event.iteration):
            continue
        said = summary(event.data)
        if said is not None:
            found.append(line(f"{event.step}[{event.iteration}] {said}"))
    return found
