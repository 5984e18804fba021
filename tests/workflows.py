"""What the tests of the generated GitHub workflows share: an install spec at a commit, and
actionlint as `scripts/install-actionlint` installs it (`actionlint.env` in the cache folder
the agent CLIs use; missing: skipped with the reason, failed under CI)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.pinned_agents import cache_dir
from tests.tools import need_tool

# A git URL at a full commit: the form `ci github --install` takes (ci_install.py).
PINNED = "git+https://github.com/example/goal-harness@" + "0123456789abcdef" * 2 + "01234567"


def actionlint() -> Path:
    """The installed pinned actionlint, or skip (fail under CI) saying how to install it."""
    cache = cache_dir()
    try:
        text = (cache / "actionlint.env").read_text()
    except FileNotFoundError:
        text = ""
    path = dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln).get("ACTIONLINT_BIN")
    if path and os.access(path, os.X_OK):
        return Path(path)
    need_tool(f"actionlint is not installed in {cache} (run scripts/install-actionlint)")
