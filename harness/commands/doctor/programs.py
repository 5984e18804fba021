"""Doctor's check of each approved goal's build program: found where a build would look for
it (the PATH of doctor's environment, a relative path in the checkout), runnable, and, when
steps run contained, in a place the sandbox shows (`loop/unrunnable.py`, the same reading
the agent_unavailable gate makes after a build that could not run)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.commands.doctor.findings import OK, Finding, fail
from harness.errors import HarnessError
from harness.loop.contain.place import Place
from harness.loop.contain.sandbox import Sandbox, resolve
from harness.loop.unrunnable import Program
from harness.model.config import Config
from harness.model.goal import Goal
from harness.store.gitrepo import Repo


def sandbox_of(config: Config, env: Mapping[str, str]) -> Sandbox | None:
    """How a run here would contain its steps (None: it would refuse; the sandbox check
    says why)."""
    try:
        return resolve(config.sandbox, env)
    except HarnessError:
        return None


def program_check(
    repo: Repo, goal: Goal, config: Config, sandbox: Sandbox | None, env: Mapping[str, str]
) -> Finding:
    check, build = f"agent {goal.id}", goal.build
    if sandbox is None:
        sandbox = Sandbox("off", "off", reason="not known")  # the program alone is checked
    try:
        place = Place.of(repo, goal.id, env, config.sandbox_binds)
        program = Program.find(build.run, repo.root, env, sandbox, place, build.network)
    except HarnessError as exc:  # a bad `sandbox_binds` entry: the config check names it
        return fail(check, str(exc), "fix .harness/config.yaml at the key named")
    if program.path is None:
        found = "not found" + ("" if "/" in program.name else " on PATH")
        fix = f"install {program.name}, or give its full path in build.run of {goal.source}"
        return fail(check, f"{program.name} {found}", fix)
    if program.hidden is not None:
        hidden = program.hidden
        it = f"its interpreter {hidden.path}" if hidden.interpreter else ""
        finding = f"{program.name} is {program.path}, which contained steps do not see"
        finding += f" ({it}{'; ' if it else ''}{hidden.describe()})"
        return fail(check, finding, hidden.fix())
    if not program.runnable:
        return fail(check, f"{program.path} is not an executable file", program.fix())
    shown = (
        program.name if str(program.path) == program.name else f"{program.name} at {program.path}"
    )
    return Finding(check, OK, shown)
