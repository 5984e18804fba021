"""The package tree is the architecture: who may import whom, and no import cycles.

Every import counts, at module level, inside a function or under TYPE_CHECKING: a lazy
import is still a dependency, only a cheaper one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"

# Lowest first. A module may import its own part and the parts before it, never after.
LAYERS: tuple[str, ...] = ("base", "store", "model", "record", "trust", "loop", "commands", "cli")
# Only the command line may know about click.
CLICK_PARTS = {"commands", "cli"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def part_of(module: str) -> str:
    """The layer a harness module belongs to: its subpackage, or `base`/`cli` at the top."""
    pieces = module.split(".")
    if len(pieces) >= 3 or (len(pieces) == 2 and (PACKAGE / pieces[1]).is_dir()):
        return pieces[1]
    if module in ("harness.cli", "harness.entry", "harness.__main__"):
        return "cli"
    return "base"


@dataclass(frozen=True)
class Source:
    text: str
    is_package: bool  # an __init__.py


def imports_of(source: Source, module: str) -> set[str]:
    """Every module `source` imports, resolved to names (relative imports included)."""
    tree = ast.parse(source.text, module)
    package = module if source.is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # `from harness.model import goal` imports the module harness.model.goal.
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def harness_modules() -> dict[str, Source]:
    return {
        module_name(p): Source(p.read_text("utf-8"), p.name == "__init__.py")
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def graph(modules: dict[str, Source]) -> dict[str, set[str]]:
    return {
        name: {dep for dep in imports_of(source, name) if dep in modules and dep != name}
        for name, source in modules.items()
    }


def forbidden_imports(modules: dict[str, Source]) -> list[str]:
    rank = {part: i for i, part in enumerate(LAYERS)}
    problems = []
    for name, deps in graph(modules).items():
        here = part_of(name)
        for dep in sorted(deps):
            there = part_of(dep)
            # A package's __init__ is the part itself: importing it is not climbing.
            if rank[there] > rank[here]:
                problems.append(f"{name} ({here}) imports {dep} ({there})")
        if here not in CLICK_PARTS and any(
            d == "click" or d.startswith("click.") for d in imports_of(modules[name], name)
        ):
            problems.append(f"{name} ({here}) imports click")
    return problems


def cycles(modules: dict[str, Source]) -> list[list[str]]:
    """Each import cycle once, as the modules along it (Tarjan's strongly connected parts)."""
    # Importing a submodule runs its package's __init__, which imports nothing of ours.
    edges = {
        name: {d for d in deps if not modules[d].is_package}
        for name, deps in graph(modules).items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(edges[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return found


def test_every_module_sits_in_a_known_part() -> None:
    unknown = {part_of(m) for m in harness_modules()} - set(LAYERS)
    assert not unknown


def test_no_part_imports_a_part_above_it() -> None:
    assert forbidden_imports(harness_modules()) == []


def test_there_is_no_import_cycle() -> None:
    assert cycles(harness_modules()) == []


def test_every_part_says_what_it_owns_and_may_import() -> None:
    for part in LAYERS[1:-1]:
        doc = ast.get_docstring(ast.parse((PACKAGE / part / "__init__.py").read_text("utf-8")))
        assert doc and "May import" in doc, part


# The checks above must be able to fail: the same functions, given a tree that breaks them.


@pytest.mark.parametrize(
    ("module", "text", "expected"),
    [
        ("harness.record.extra", "from harness.loop import controller\n", "imports harness.loop"),
        ("harness.store.extra", "def f():\n    from harness.model.goal import Goal\n", "imports"),
        ("harness.model.extra", "import click\n", "imports click"),
        (
            "harness.trust.extra",
            "from ..loop.steps import run_step\n",
            "imports harness.loop.steps",
        ),
    ],
)
def test_a_forbidden_import_is_named(module: str, text: str, expected: str) -> None:
    modules = harness_modules()
    modules[module] = Source(text, is_package=False)
    assert any(expected in p for p in forbidden_imports(modules))


def test_a_cycle_through_a_function_level_import_is_found() -> None:
    modules = harness_modules()
    modules["harness.store.cycle_a"] = Source("from harness.store import cycle_b\n", False)
    modules["harness.store.cycle_b"] = Source("def f():\n    from . import cycle_a\n", False)
    assert ["harness.store.cycle_a", "harness.store.cycle_b"] in cycles(modules)


def environ_outside_env(text: str) -> list[int]:
    """Lines of harness/cli.py that name os.environ outside `_env`: a command handed
    os.environ would not see the secret's variables main() took out of it first thing."""
    tree = ast.parse(text)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_env":
            allowed |= {n.lineno for n in ast.walk(node) if hasattr(n, "lineno")}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.lineno not in allowed
    ]


def test_commands_get_the_held_environment() -> None:
    assert environ_outside_env((ROOT / "harness" / "cli.py").read_text()) == []


def test_a_command_handed_os_environ_is_named() -> None:
    text = "import os\ndef _env():\n    return os.environ\ndef diff():\n    run(os.environ)\n"
    assert environ_outside_env(text) == [5]


def test_every_module_has_a_room_in_the_map() -> None:
    # architecture.md's table is where the next engineer looks for a module: each module of
    # the five lower parts (commands are one module per command) is named in its part's row.
    doc = (PACKAGE.parent / "docs" / "specs" / "architecture.md").read_text("utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| `harness/")]
    missing = []
    for part in ("store", "model", "record", "trust", "loop"):
        (row,) = [line for line in rows if line.startswith(f"| `harness/{part}/`")]
        for path in sorted((PACKAGE / part).rglob("*.py")):
            inside = path.relative_to(PACKAGE / part).parts
            if path.name == "__init__.py" or (len(inside) > 1 and inside[0] == "agents"):
                continue  # the agents' parsers are agents.md's
            if f"`{path.stem}`" not in row:
                missing.append(f"harness/{part}/{'/'.join(inside)}")
    assert missing == []


def test_no_merge_conflict_is_left_in_the_tree() -> None:
    marks = ("<<<<<<< ", "=======\n", ">>>>>>> ")
    root = PACKAGE.parent
    found = []
    for folder in ("harness", "docs", "scripts", ".ci"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".md", ".json", ".yaml", ".yml", ""}:
                text = path.read_text("utf-8", "replace")
                lines = text.splitlines(keepends=True)
                if any(line.startswith(marks) or line == marks[1] for line in lines):
                    found.append(str(path.relative_to(root)))
    assert found == []
