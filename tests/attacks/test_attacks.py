"""Every attack in `cases.ATTACKS` is refused, and the refusal changes nothing.

Each case copies the module's finished world, tampers with the copy, runs one real
command, and checks (a) the exit code and a message naming the problem (or the gate that
`harness status --json` shows), (b) that every recorded byte is as it was before the
command: cells, ledger segments, reports, approvals, goal files, counters (so no agent or
judge ran), branches and worktrees.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from tests.attacks.cases import ATTACKS, Attack, Expect, approve_g3_with, decide, rotation_signed_by
from tests.attacks.world import World, build_world
from tests.tools import bwrap_problem, need_tool

README = Path(__file__).with_name("README.md")


# Every row runs with the steps bare and contained (`sandbox: required`, bubblewrap): each
# world names its mode (world.py), so the suite's contained/bare parametrization, which
# would only run each row twice in the same mode, is not applied here (conftest.py).
SANDBOX = ["off", "required"]
NAMES_ITS_SANDBOX_MODE = True


@pytest.fixture(scope="module", params=SANDBOX)
def base(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    if request.param == "required" and bwrap_problem() is not None:
        need_tool(str(bwrap_problem()))  # skipped here, failed under CI
    world = build_world(tmp_path_factory.mktemp("attack-world") / "base", request.param)
    yield world
    shutil.rmtree(world.home.parent, ignore_errors=True)


@pytest.fixture
def world(base: World, tmp_path: Path) -> Iterator[World]:
    """A private copy of the base world, removed afterwards: the suite makes about a
    hundred, and pytest keeps its last temp folders in a /tmp shared with other runs."""
    copy = base.copy_to(tmp_path / "world")
    yield copy
    shutil.rmtree(copy.home, ignore_errors=True)


def _param(attack: Attack) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=attack.vulnerable)] if attack.vulnerable else []
    return pytest.param(attack, id=attack.name, marks=marks)


# ---- what must not change ------------------------------------------------------------------


# Inside `.git`: the refs (branches, packed-refs, HEADs), each worktree's registration, and
# the harness's machine-local folder. Read as files: no git process per snapshot.
_GIT_RECORDED = re.compile(r"(HEAD|packed-refs|refs/.*|worktrees/[^/]+/(HEAD|gitdir)|harness/.*)")
# Taking a goal's lock comes before reading its approval (docs/specs/loop.md), and a lock
# file holds only its holder's pid: locks are left out.
_LOCK = re.compile(r"harness/locks/[^/]+")


def _recorded(rel: Path) -> bool:
    parts = rel.parts
    if ".git" not in parts[:-1]:
        return True  # also a worktree's own `.git` file
    inside = "/".join(parts[parts.index(".git") + 1 :])
    return bool(_GIT_RECORDED.fullmatch(inside)) and not _LOCK.fullmatch(inside)


def snapshot(world: World) -> dict[str, bytes]:
    """Every recorded byte below the world's folder, by path relative to it; the counters
    as `counters/…` wherever they are (World.live)."""
    found = {
        str(path.relative_to(world.home)): path.read_bytes()
        for path in sorted(world.home.rglob("*"))
        if path.is_file() and _recorded(path.relative_to(world.home))
    }
    if world.live is not None:
        found = {k: v for k, v in found.items() if not k.startswith("counters/")}
        for path in sorted(world.live.rglob("*")):
            if path.is_file():
                found[f"counters/{path.relative_to(world.live)}"] = path.read_bytes()
    return found


def changed(
    before: dict[str, bytes], after: dict[str, bytes], allowed: tuple[str, ...]
) -> list[str]:
    keys = before.keys() | after.keys()
    diff = [k for k in keys if before.get(k) != after.get(k)]
    return sorted(k for k in diff if not k.startswith(allowed))


# ---- running the command -------------------------------------------------------------------


def invoke(world: World, command: tuple[str, ...]) -> tuple[int, str]:
    if any("\0" in arg for arg in command):
        return _invoke_in_process(world, command)
    proc = world.repo.harness(*command, env=world.env, timeout=30)
    return proc.returncode, proc.stdout + proc.stderr


def _invoke_in_process(world: World, command: tuple[str, ...]) -> tuple[int, str]:
    # execve refuses an argument with a NUL byte, so such an id can only reach the CLI from
    # a caller in the same process: click's runner, with the same parser and error handling.
    with contextlib.chdir(world.root):
        result = CliRunner().invoke(cli, list(command), env=world.env)
    return result.exit_code, result.stdout + result.stderr


# ---- checks --------------------------------------------------------------------------------


def check_gate(world: World, goal_id: str, expect: Expect) -> None:
    # In-process: the same click command, without paying for another interpreter.
    code, output = _invoke_in_process(world, ("status", "--json", goal_id))
    assert code == 0, output
    rows = json.loads(output)
    assert (rows[0]["status"], rows[0]["gate"]) == (expect.status, expect.gate)
    detail = json.loads(world.cell(goal_id).read_bytes())["gate_detail"]
    assert re.search(expect.message, detail), detail


@pytest.mark.parametrize("attack", [_param(a) for a in ATTACKS])
def test_attack_is_refused_and_changes_nothing(attack: Attack, world: World) -> None:
    if world.live is not None and attack.bare_only:
        pytest.skip(f"bare only: {attack.bare_only}")
    attack.setup(world)
    before = snapshot(world)
    code, output = invoke(world, attack.command)
    assert code == attack.expect.code, output
    if attack.expect.gate is not None:
        check_gate(world, attack.command[-1], attack.expect)
    else:
        assert re.search(attack.expect.message, output), output
    assert changed(before, snapshot(world), attack.expect.may_change) == []


def test_the_untouched_world_runs(world: World) -> None:
    """The control case: without an attack, the same commands succeed and g1's build runs."""
    builds = world.repo.count("build")
    assert invoke(world, ("verify", "g1", "g2", "g4"))[0] == 0
    assert invoke(world, ("run", "g1", "--max-steps", "1"))[0] == 0
    assert world.repo.count("build") == [*builds, "2"]  # g1's repair build ran


# ---- controls: the same forgeries, done right, are accepted -----------------------------
# They show that each refusal above is for the one thing the attack got wrong, not for a
# mistake in how this suite builds statements, signatures or decisions.


def test_control_owner_approval_made_with_ssh_keygen_runs(world: World) -> None:
    approve_g3_with("owner")(world)
    code, output = invoke(world, ("run", "g3", "--max-steps", "1"))
    assert code == 0, output
    assert "g3 #2 build[1] started" in output


def test_control_exact_owner_ship_decision_ships(world: World) -> None:
    decide("g2", "ship")(world)
    code, output = invoke(world, ("run", "g2"))
    assert code == 0, output
    assert (world.counters / "ship.log").read_text() == "shipped"


def test_control_rotation_signed_by_a_pinned_owner_is_accepted(world: World) -> None:
    rotation_signed_by("owner")(world)
    code, output = invoke(world, ("run", "g1", "--max-steps", "1"))
    assert code == 0, output
    assert world.repo.status()["gate"] is None
    assert world.repo.count("build")[-1] == "2"


def test_the_table_is_large_and_names_are_unique() -> None:
    names = [attack.name for attack in ATTACKS]
    assert len(names) >= 35
    assert len(set(names)) == len(names)


def test_readme_lists_every_case() -> None:
    text = README.read_text()
    missing = [a.name for a in ATTACKS if f"`{a.name}`" not in text]
    assert missing == []


def test_each_world_runs_its_steps_as_it_says(base: World) -> None:
    """The off world's steps ran bare and the required world's under bubblewrap, whatever
    HARNESS_SANDBOX the test process had when the world was made."""
    started = [
        event["data"].get("sandbox")
        for line in base.lines()
        if (event := json.loads(line)["e"])["type"] == "step.started"
    ]
    want = "off" if base.live is None else "bwrap"
    assert started and set(started) == {want}, started
