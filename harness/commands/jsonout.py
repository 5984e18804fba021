"""`--json` for the commands whose output is a few lines about one act (`approve`, `ship`,
`unpark`, `cancel`, `report`): one JSON document instead of the lines.

`{"command", "goal", "exit_code", "error", "lines"}`: `lines` are exactly the lines the
command prints without `--json` (already through the sanitiser), `error` the one-line
message of a refusal (else null). A refusal still writes its line on stderr and exits with
its code, so a script may read either.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any, TextIO

from harness.errors import HarnessError
from harness.record.visible import one_line


def as_document(
    run: Callable[[TextIO], int], out: TextIO, command: str, goal: str | list[str] | None
) -> int:
    """Run `run` with its output captured, then print it as the one document."""
    captured = io.StringIO()
    document: dict[str, Any] = {"command": command, "goal": goal}
    try:
        code = run(captured)
    except HarnessError as exc:
        document |= {"exit_code": exc.exit_code, "error": one_line(str(exc))}
        out.write(json.dumps(document | {"lines": _lines(captured)}, indent=2) + "\n")
        raise
    document |= {"exit_code": code, "error": None, "lines": _lines(captured)}
    out.write(json.dumps(document, indent=2) + "\n")
    return code


def _lines(captured: io.StringIO) -> list[str]:
    return captured.getvalue().splitlines()
