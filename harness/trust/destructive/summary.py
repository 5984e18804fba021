"""One line for people: the hits of a gate, grouped by class and bounded."""

from __future__ import annotations

from collections.abc import Sequence

from harness.trust.destructive.hits import Hit, classes_of, one_line


def summarize(hits: Sequence[Hit], limit: int = 20) -> str:
    """One line for a gate detail: `class: path:line text; ... | class: ...`, `limit` items."""
    groups: dict[str, dict[str, None]] = {}  # class -> its items, unique, in order
    for hit in hits:
        groups.setdefault(hit.cls, {})[_summary_item(hit)] = None
    parts, room = [], max(limit, 0)
    for cls in classes_of(hits):
        shown = list(groups[cls])[:room]
        room -= len(shown)
        parts.append(f"{cls}: " + ("; ".join(shown) if shown else "…"))
    hidden = sum(len(items) for items in groups.values()) - (max(limit, 0) - room)
    tail = f" … (+{hidden} more)" if hidden > 0 else ""
    return one_line(" | ".join(parts) + tail)


def _summary_item(hit: Hit) -> str:
    if hit.line is not None:
        return f"{hit.path}:{hit.line} {hit.text}"
    return hit.path or hit.text
