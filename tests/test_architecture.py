"""The package tree is the architecture: who may import whom, and no import cycles.

Every import counts, at module level, inside a function or under TYPE_CHECKING: a lazy
import is still a dependency, only a cheaper one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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
    if module in (
        "harness.cli",
        "harness.cli_ci",
        "harness.group",
        "harness.entry",
        "harness.__main__",
    ):
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
    """Lines of a command-line module that name os.environ outside `env` (group.py): a command handed
    os.environ would not see the secret's variables main() took out of it first thing."""
    tree = ast.parse(text)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "env":
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


@pytest.mark.parametrize("name", ["cli.py", "cli_ci.py", "group.py"])
def test_commands_get_the_held_environment(name: str) -> None:
    assert environ_outside_env((ROOT / "harness" / name).read_text()) == []


def test_a_command_handed_os_environ_is_named() -> None:
    text = "import os\ndef env():\n    return os.environ\ndef diff():\n    run(os.environ)\n"
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


MAX_MODULE_LINES = 500  # issue 29: past this a module holds more than one concern


def oversized(root: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """The modules under `root` longer than `limit` lines, with their length."""
    sizes = {p: len(p.read_text("utf-8").splitlines()) for p in sorted(root.rglob("*.py"))}
    return [f"{p.relative_to(root.parent)}: {n} lines" for p, n in sizes.items() if n > limit]


def test_no_module_is_over_500_lines() -> None:
    assert oversized(PACKAGE) == []


def test_an_oversized_module_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "pkg" / "small.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert oversized(tmp_path / "pkg") == [f"pkg/big.py: {MAX_MODULE_LINES + 1} lines"]


def private_imports(path: Path, text: str) -> list[str]:
    """`from harness.x import _name` in `text` (module `path`): another module's private
    helper, which the next engineer cannot see is used outside its module."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path}:{node.lineno}: {node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_helpers() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += private_imports(path.relative_to(ROOT), path.read_text("utf-8"))
    assert found == []


def test_a_private_import_is_named() -> None:
    text = "from harness.commands.check import _config, stored_goal_bytes\n"
    assert private_imports(Path("a.py"), text) == ["a.py:1: harness.commands.check._config"]
    assert private_imports(Path("a.py"), "from harness import __version__\n") == []


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


# ---- what a command prints ------------------------------------------------------------------
#
# Every line a command or the notification hook prints may carry recorded or step-produced
# text (a ship step's output in a gate detail, a test id, a signer), so each is made by the
# one sanitiser, harness/record/visible.py (issue 27). The check reads each write: the
# argument of every `.write(...)`, `.writelines(...)`, `print(...)` and `echo(...)` must be
# text with nothing interpolated, a call to a sanitiser imported from visible.py (`line`,
# `lines`, `block`) or render.py (`text_line`), `json.dumps` (ASCII: every control escaped),
# a call to a function of the same module all of whose `return`s are such, or `+`, `if`
# and generator expressions of those. Anything else (a variable, an f-string with a field
# outside the sanitiser) is named by module and line.
#
# Its limits: it sees writes in these modules only; a stream handed to another part (the
# loop's print callback, the renderer's bytes) is checked there, by tests/record/
# test_visible.py and the end-to-end hostile-output tests, and the writes that pass such
# lines on are the RAW_WRITES below, each with its reason. It follows a local function's
# returns, not its variables, so a sanitised value kept in a variable must be written where
# it is made. It proves the sanitiser is on the path, not that the right one was chosen:
# `block` keeps newlines, meant for output shown as a block (a report), not for a line.

PRINTING = [PACKAGE / "commands", PACKAGE / "loop" / "notify.py"]
SANITISERS = {
    "harness.record.visible": {"line", "lines", "block"},
    "harness.record.render": {"text_line"},
}
# (module, function) -> why its writes pass text on unchanged.
RAW_WRITES = {
    ("harness.commands.decide", "act_now.print_line"): "an event line, made by render.text_line",
    ("harness.commands.run", "_run.print_line"): "an event line, made by render.text_line",
    ("harness.commands.jobs", "_Worker.__init__"): "the secret, into a worker's pipe",
    ("harness.commands.replay", "_write"): "the renderer's bytes, sanitised field by field",
    ("harness.commands.diff", "diff"): "git's own diff, byte for byte (cli.md, `harness diff`)",
    ("harness.commands.trace", "trace"): "OTLP/JSON, every text value sanitised (traceattrs)",
    ("harness.commands.attest", "_write_bundle"): "canonical JSON of DSSE envelopes: ASCII only",
}


def _sanitisers(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in SANITISERS:
            found |= {a.asname or a.name for a in node.names if a.name in SANITISERS[node.module]}
    return found


class _Writes:
    """The writes of one module whose text is not known to be sanitised."""

    def __init__(self, tree: ast.Module) -> None:
        self.sanitisers = _sanitisers(tree)
        self.functions = {
            n.name: n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.following: set[str] = set()

    def sanitised(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str | bytes)
        if isinstance(node, ast.JoinedStr):
            return all(isinstance(part, ast.Constant) for part in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.sanitised(node.left) and self.sanitised(node.right)
        if isinstance(node, ast.IfExp):
            return self.sanitised(node.body) and self.sanitised(node.orelse)
        if isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self.sanitised(node.elt)
        return isinstance(node, ast.Call) and self._sanitising_call(node)

    def _sanitising_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            ascii_only = all(k.arg != "ensure_ascii" for k in call.keywords)
            return func.value.id == "json" and func.attr == "dumps" and ascii_only
        if not isinstance(func, ast.Name):
            return False
        if func.id in self.sanitisers:
            return True
        local = self.functions.get(func.id)
        if local is None or func.id in self.following:
            return False
        self.following.add(func.id)  # a recursive function is judged by its other returns
        returns = [n for n in ast.walk(local) if isinstance(n, ast.Return)]
        judged = bool(returns) and all(
            r.value is not None and self.sanitised(r.value) for r in returns
        )
        self.following.discard(func.id)
        return judged


def _written(call: ast.Call) -> ast.expr | None:
    """What `call` writes for a human, if it is a write."""
    func = call.func
    named = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if named in ("write", "writelines", "echo") or (
        named == "print" and isinstance(func, ast.Name)
    ):
        return call.args[0] if call.args else None
    return None


def raw_writes(module: str, text: str) -> list[str]:
    """`module:line` of each write in `text` whose text is not known to be sanitised."""
    tree = ast.parse(text)
    checker = _Writes(tree)
    found = []

    for call, function in _calls(tree):
        written = _written(call)
        exempt = (module, function) in RAW_WRITES
        if written is not None and not exempt and not checker.sanitised(written):
            found.append(f"{module}:{call.lineno}")
    return found


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, str]]:
    """Each call with the qualified name of the function it is in (`Class.method.inner`)."""

    def visit(node: ast.AST, where: str) -> Iterator[tuple[ast.Call, str]]:
        for child in ast.iter_child_nodes(node):
            inside = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inside = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.Call):
                yield child, where
            yield from visit(child, inside)

    return visit(tree, "")


def _qualified_functions(tree: ast.Module) -> set[str]:
    return {where for _, where in _calls(tree)}


def printing_modules() -> dict[str, str]:
    paths = [
        p for place in PRINTING for p in sorted([place] if place.is_file() else place.glob("*.py"))
    ]
    return {module_name(p): p.read_text("utf-8") for p in paths}


def test_every_printed_line_goes_through_the_sanitiser() -> None:
    found = [raw for module, text in printing_modules().items() for raw in raw_writes(module, text)]
    assert found == []


def test_each_raw_write_is_still_there() -> None:
    # An exemption whose function is gone (renamed, moved) would quietly cover a new one.
    for module, function in RAW_WRITES:
        text = printing_modules()[module]
        assert function in _qualified_functions(ast.parse(text)), (module, function)


_IMPORT = "from harness.record.visible import line, lines\n"


@pytest.mark.parametrize(
    ("text", "raw"),
    [
        # the ship step's output, as `harness ship` printed it before issue 27
        ("out.write(f'the ship step failed: {cell.gate_detail}\\n')", True),
        (_IMPORT + "out.write(lines(f'the ship step failed: {cell.gate_detail}'))", False),
        ("def line(t):\n    return t\nout.write(line(detail))", True),  # not the sanitiser
        (_IMPORT + "out.write(line(f'{a}') + f'{b}\\n')", True),
        (
            "def _text(f):\n    return f'{f.finding}\\n'\nout.writelines(_text(f) for f in found)",
            True,
        ),
        (
            _IMPORT
            + "def _text(f):\n    return line(f.finding)\nout.writelines(_text(f) for f in x)",
            False,
        ),
        ("err.write(message)", True),
        ("print(row)", True),
        ("click.echo(row)", True),
        ("out.write(json.dumps(rows, ensure_ascii=False))", True),
        ("out.write(json.dumps(rows, indent=2) + '\\n')", False),
        ("out.write('wrote the workflow\\n')", False),
    ],
)
def test_a_write_without_the_sanitiser_is_named(text: str, raw: bool) -> None:
    assert bool(raw_writes("harness.commands.extra", text)) is raw
