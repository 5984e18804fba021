"""What the tests of the generated GitHub workflows share: an install spec at a commit."""

from __future__ import annotations

# A git URL at a full commit: the form `ci github --install` takes (ci_install.py).
PINNED = "git+https://github.com/example/goal-harness@" + "0123456789abcdef" * 2 + "01234567"
