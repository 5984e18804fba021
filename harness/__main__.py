from __future__ import annotations

from harness.cli import main

main()
