"""Coverage in the harness's own processes only (scripts/test installs this as a .pth line).

coverage's `patch = subprocess` starts coverage in every Python process the suite makes:
besides the harness, thousands of small agents, judges and servers the tests run with the
venv's Python. Starting coverage costs each about 0.2 s of CPU (measured: 0.27 s against
0.04 s for `python -c pass`) and collects nothing, since they import no harness code. This
line runs before coverage's own .pth (the names sort `a0` < `a1`) and, in any process that is
not the harness, a pytest-xdist worker or inline code importing the harness, drops the
variables coverage starts from.
"""

import os
import sys


def _measured(argv: list[str]) -> bool:
    rest = iter(argv[1:])
    for arg in rest:
        if arg in ("-X", "-W"):
            next(rest, None)
        elif arg == "-m":
            module = next(rest, "")
            return module == "harness" or module.startswith("harness.")
        elif arg == "-c":
            code = next(rest, "")
            return "harness" in code or "sys.stdin.readline()" in code  # xdist's bootstrap
        elif not arg.startswith("-"):
            return os.path.basename(arg) == "harness"  # the console script
    return False


if not _measured(list(getattr(sys, "orig_argv", []))):
    os.environ.pop("COVERAGE_PROCESS_CONFIG", None)
    os.environ.pop("COVERAGE_PROCESS_START", None)
