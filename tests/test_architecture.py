"""Rooms a newcomer can live in (docs/architecture.md): no module, class or
function past a size one person holds in their head, imports that point one
way (no cycle between the package's modules, lazy imports included), and
layers that point one way (no subpackage imports one above it)."""
from __future__ import annotations

import ast
from pathlib import Path

from .helpers import ROOT

MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 350
MAX_FUNCTION_LINES = 100


def sources() -> dict[str, Path]:
    """The package's modules by dotted name (checkers/ installs as
    autograd_lint.checkers)."""
    found = {}
    for folder, prefix in ((ROOT / "autograd_lint", ["autograd_lint"]),
                           (ROOT / "checkers", ["autograd_lint", "checkers"])):
        for path in sorted(folder.rglob("*.py")):
            parts = prefix + list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def oversized() -> list[str]:
    found = []
    for name, path in sources().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"module {name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            size = (node.end_lineno or node.lineno) - node.lineno + 1 \
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else 0
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if size > limit:
                found.append(f"{type(node).__name__} {name}.{node.name}: {size} lines")  # type: ignore[attr-defined]
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules `name` imports, anywhere in its body (lazy imports
    count; `if TYPE_CHECKING:` blocks do not)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {target for target in found if target in known and target != name}


def cycles() -> list[list[str]]:
    """The strongly connected components of the import graph with more than
    one module (Tarjan's algorithm, iteratively)."""
    modules = sources()
    graph = {name: sorted(imports(name, path, set(modules))) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(graph[node]):
                work.append((node, child + 1))
                target = graph[node][child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            for target in graph[node]:
                if target in on_stack:
                    low[node] = min(low[node], low[target])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


# The layers, lowest first (docs/architecture.md): a module imports only its
# own layer and those below it. The package's root `__init__` holds only the
# version (below every layer); the other modules at the top level are the
# entry points (above every layer).
LAYERS = ("core", "analysis", "checkers", "engine", "reporting", "dynamic", "integrations", "cli")
ENTRY_POINTS = {"autograd_lint.__main__", "autograd_lint.flake8_plugin",
                "autograd_lint.pylint_plugin", "autograd_lint.pytest_plugin"}


def layer_of(name: str) -> int:
    if name == "autograd_lint":
        return -1
    parts = name.split(".")
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else len(LAYERS)


def upward_imports() -> list[tuple[str, str]]:
    """(module, what it imports) for each import of a higher layer."""
    modules = sources()
    return sorted((name, target) for name, path in modules.items()
                  for target in imports(name, path, set(modules))
                  if layer_of(target) > layer_of(name))


def test_no_module_class_or_function_is_oversized() -> None:
    assert oversized() == []


def test_no_import_cycle_between_the_package_modules() -> None:
    assert cycles() == []


def test_the_checks_see_what_they_look_for(tmp_path: Path, monkeypatch) -> None:
    """A cycle and an oversized def are found (the checks can fail)."""
    package = tmp_path / "autograd_lint"
    package.mkdir()
    (tmp_path / "checkers").mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n")
    (package / "b.py").write_text("from .a import f\n\n\ndef g():\n" + "    x = 1\n" * 101)
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert cycles() == [["autograd_lint.a", "autograd_lint.b"]]
    assert oversized() == ["FunctionDef autograd_lint.b.g: 102 lines"]


def test_layers_point_one_way() -> None:
    assert upward_imports() == []


def test_the_top_level_holds_only_the_entry_points() -> None:
    top = {name for name in sources() if name.count(".") == 1 and
           name.split(".")[1] not in LAYERS and name.split(".")[1] != "rule_docs"}
    assert top == ENTRY_POINTS


def test_an_upward_import_is_found(tmp_path: Path, monkeypatch) -> None:
    """A module of the model planted with an import of the command line (at
    run time, inside a function) breaks the layering."""
    package = tmp_path / "autograd_lint"
    for layer in ("core", "cli"):
        (package / layer).mkdir(parents=True)
        (package / layer / "__init__.py").write_text("")
    (tmp_path / "checkers").mkdir()
    (package / "__init__.py").write_text("__version__ = '0'\n")
    (package / "cli" / "entry.py").write_text("from ..core.model import Model\n")
    (package / "core" / "model.py").write_text(
        "from .. import __version__\n\n\nclass Model:\n    def run(self):\n"
        "        from ..cli.entry import main\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert upward_imports() == [("autograd_lint.core.model", "autograd_lint.cli.entry")]


def test_the_engines_public_names_keep_their_path() -> None:
    """Scripts that used `autograd_lint.engine.lint_source` (a module before
    the engine became a folder) still find it, loaded on first use."""
    import autograd_lint.engine as engine
    from autograd_lint.engine.lint import lint_inputs, lint_source
    from autograd_lint.engine.run_io import SourceInput

    assert (engine.lint_source, engine.lint_inputs, engine.SourceInput) == \
        (lint_source, lint_inputs, SourceInput)
    assert not hasattr(engine, "no_such_name")
