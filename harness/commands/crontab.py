"""Putting `harness ci cron`'s block into the user's crontab, in place of an earlier one.

The block is marked by a begin and an end comment naming the repository, so installing
again replaces it where it stands and leaves every other entry alone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.errors import InvalidInput


def cron_begin(root: Path) -> str:
    return f"# >>> goal-harness {root} >>>"


def cron_end(root: Path) -> str:
    return f"# <<< goal-harness {root} <<<"


def merge_cron_block(current: str, root: Path, block: list[str]) -> tuple[str, bool]:
    """`current` with this repository's block replaced in place (True), or appended."""
    lines = current.splitlines()
    begin, end = cron_begin(root), cron_end(root)
    if begin in lines and end in lines[lines.index(begin) :]:
        start = lines.index(begin)
        stop = lines.index(end, start)
        return "\n".join([*lines[:start], *block, *lines[stop + 1 :]]) + "\n", True
    return "\n".join([*lines, *block]) + "\n", False


def install_cron_block(root: Path, block: list[str]) -> bool:
    """Read `crontab -l`, put the block in, write it back with `crontab -`."""
    listed = _crontab(["-l"], "")
    missing = listed.returncode != 0 and "no crontab" in listed.stderr.lower()
    if listed.returncode != 0 and not missing:
        raise InvalidInput(f"crontab -l: {_tail(listed.stderr)} (expected it to list your crontab)")
    text, replaced = merge_cron_block("" if missing else listed.stdout, root, block)
    written = _crontab(["-"], text)
    if written.returncode != 0:
        raise InvalidInput(
            f"crontab -: {_tail(written.stderr)} (expected it to take the new crontab)"
        )
    return replaced


def _crontab(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["crontab", *args], input=stdin, capture_output=True, text=True, timeout=60
        )
    except FileNotFoundError:
        raise InvalidInput(
            "crontab: not found on PATH (expected cron's crontab command; or paste the "
            "printed entry into `crontab -e`)"
        ) from None


def _tail(text: str) -> str:
    return " ".join(text.split())[-300:] or "failed"
