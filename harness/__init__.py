"""goal-harness: a git-native goal-loop harness for unattended coding agents."""

from __future__ import annotations

__version__ = "0.1.0"
