"""The real outputs and records the pinned agent CLIs wrote (tests/data/agents/README.md)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "agents"


def capture(tool: str, name: str) -> bytes:
    return (DATA / tool / name).read_bytes()


def all_outputs() -> list[tuple[str, str]]:
    """Every captured stdout, as (format, path under DATA)."""
    formats = {"claude": "claude-json", "codex": "codex-jsonl", "aider": "aider"}
    return [
        (formats[path.parent.name], f"{path.parent.name}/{path.name}")
        for path in sorted(DATA.glob("*/*.out"))
    ]
