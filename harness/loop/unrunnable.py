"""A build command that could not run: exit 127 (not found) or 126 (not runnable), the
shell's codes, which `steps.run_step` gives bare and contained alike. Its agent never ran,
so the goal stops at once at agent_unavailable instead of blaming the judge (loop.md, "A
missing agent"). What the gate's detail and `harness doctor` say about the program is here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.loop.contain.place import Place
from harness.loop.contain.reach import Hidden, hidden, locate
from harness.loop.contain.sandbox import Sandbox

UNRUNNABLE_CODES = {127: "command not found", 126: "command not executable"}
MAX_SAID_CHARS = 300  # of the command's last line of output, in the gate's detail


@dataclass(frozen=True)
class Program:
    """A step's program: its name as the goal file writes it, where it is for the runner,
    and what hides it from a contained step."""

    name: str
    path: Path | None  # None: not found (not on PATH, or no such file)
    hidden: Hidden | None
    path_var: str | None  # the runner's PATH

    @classmethod
    def find(
        cls,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        sandbox: Sandbox,
        place: Place,
        network: bool = True,
    ) -> Program:
        name, path_var = argv[0], env.get("PATH")
        path = locate(name, cwd, path_var)
        shut = hidden(sandbox, place, path, network) if path is not None else None
        return cls(name, path, shut, path_var)

    @property
    def runnable(self) -> bool:
        return self.path is not None and self.path.is_file() and os.access(self.path, os.X_OK)

    @property
    def where(self) -> str:
        """`is <path>`, saying when the path came from PATH."""
        on_path = "" if "/" in self.name else " on the runner's PATH"
        return f"is {self.path}{on_path}"

    def problem(self) -> str | None:
        """Why it cannot run, as far as the runner can tell (None: it looks runnable)."""
        if self.path is None and "/" in self.name:
            return f"`{self.name}` does not exist"
        if self.path is None:
            return f"`{self.name}` is not on the runner's PATH ({self.path_var or 'unset'})"
        if self.hidden is not None:
            it = f"its interpreter {self.hidden.path}" if self.hidden.interpreter else "it"
            return (
                f"`{self.name}` {self.where}, but contained steps do not see {it}: "
                f"{self.hidden.describe()}"
            )
        if not self.runnable:
            return f"`{self.name}` {self.where}, which is not an executable file"
        return None

    def fix(self) -> str:
        if self.path is None:
            return "install it, or give its full path in build.run"
        if self.hidden is not None:
            return self.hidden.fix()
        if not self.runnable:
            return f"make it executable (chmod +x {self.path}), or correct build.run"
        return "install what it runs"


def unrunnable_detail(program: Program, code: int, output: str, goal_id: str) -> str:
    """The agent_unavailable gate's detail for a build that exited 127 or 126."""
    why = program.problem()
    if why is None:  # a wrapper script's own command, most likely
        missed = "was not found" if code == 127 else "could not be run"
        why = f"`{program.name}` {program.where}; a command it runs {missed}"
    said = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
    told = f" (it said: {said[:MAX_SAID_CHARS]})" if said else ""
    return (
        f"build.run exited {code} ({UNRUNNABLE_CODES[code]}): {why}; {program.fix()}; then "
        f"`harness unpark {goal_id} --key K` runs the build again{told}"
    )
