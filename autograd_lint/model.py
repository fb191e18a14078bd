"""Module model: imports, aliases, scopes and class definitions of one file.

One pass over a module's statements records, per scope, which local names are
bound to which qualified names (`from torch.autograd import Function as F`
binds `F` to `torch.autograd.Function`), and every class definition with its
bases resolved the same way. Whether a class is a custom Function is decided
later, over all scanned modules (see project.py).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class Scope:
    """Names bound in one module, class or function body.

    A binding maps a local name to a qualified name ("torch.autograd") or to
    None when the name is bound to something we cannot follow (a def, a
    parameter, an arbitrary assignment): None shadows outer bindings.
    """

    __slots__ = ("parent", "kind", "bindings", "qualname")

    def __init__(self, parent: Scope | None, kind: str, qualname: str) -> None:
        self.parent = parent
        self.kind = kind  # "module" | "class" | "function"
        self.bindings: dict[str, str | None] = {}
        self.qualname = qualname

    def lookup(self, name: str) -> tuple[bool, str | None]:
        """(found, qualified name or None) following Python's scoping rules."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            # Class bodies are not visible from functions nested inside them.
            if (first or scope.kind != "class") and name in scope.bindings:
                return True, scope.bindings[name]
            first = False
            scope = scope.parent
        return False, None

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name of a dotted expression, or None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Subscript):  # Generic[...] bases
            return self.resolve(node.value) if not parts else None
        if not isinstance(node, ast.Name):
            return None
        found, qualified = self.lookup(node.id)
        if not found:
            # An unimported `torch` is still torch (star imports, notebooks).
            qualified = node.id if node.id == "torch" else None
        if qualified is None:
            return None
        return ".".join([qualified, *reversed(parts)])


@dataclass
class ClassInfo:
    """A class definition anywhere in a module."""

    name: str
    key: str  # module-qualified, like __qualname__: "pkg.mod.outer.<locals>.Local"
    node: ast.ClassDef
    scope: Scope  # the scope the class statement runs in
    body_scope: Scope
    base_names: list[str | None]  # resolved qualified names of the bases (None: unknown)
    module: ModuleInfo

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class ModuleInfo:
    path: str
    module_name: str
    is_package: bool
    tree: ast.Module
    source: str
    scope: Scope
    classes: list[ClassInfo] = field(default_factory=list)
    # The scope each def/class body runs in (by id of its node), and every def
    # by its qualified name inside the module ("helper", "Outer.method").
    scopes: dict[int, Scope] = field(default_factory=dict)
    defs: dict[str, FunctionNode] = field(default_factory=dict)
    partial: bool = False  # parsed sparsely: only the statements that can matter
    # Names of Functions this module can use (defined or imported), when a
    # project scan has judged it; None: unknown, assume any.
    reach: frozenset[str] | None = None

    @property
    def top_bindings(self) -> dict[str, str | None]:
        return self.scope.bindings


def module_name_for(path: str, root_hint: str | None = None) -> tuple[str, bool]:
    """Dotted module name of a file, walking up through `__init__.py` packages."""
    return ModuleNamer()(path)


class ModuleNamer:
    """`module_name_for` that remembers each directory's package, for the many
    files of one run (a fresh one per run: packages may change between runs)."""

    def __init__(self) -> None:
        self._packages: dict[str, tuple[str, ...]] = {}  # by absolute directory
        self._given: dict[str, tuple[str, ...]] = {}  # by directory as given

    def __call__(self, path: str) -> tuple[str, bool]:
        import os

        directory, filename = os.path.split(path)
        package = self.package_of_directory(directory)
        stem = filename[:-3] if filename.endswith(".py") else filename.rsplit(".", 1)[0]
        is_package = stem == "__init__"
        parts = package + (() if is_package else (stem,))
        return ".".join(p for p in parts if p) or stem, is_package

    def package_of_directory(self, directory: str) -> tuple[str, ...]:
        """The dotted parts of the package a directory (as given) is."""
        import os

        package = self._given.get(directory)
        if package is None:
            package = self._package(os.path.abspath(directory or os.curdir))
            self._given[directory] = package
        return package

    def _package(self, directory: str) -> tuple[str, ...]:
        """The dotted parts of the package a directory is, () if it is none."""
        import os

        found = self._packages.get(directory)
        if found is None:
            found = ()
            if os.path.isfile(os.path.join(directory, "__init__.py")):
                parent, name = os.path.split(directory)
                if name:
                    found = (*self._package(parent), name)
            self._packages[directory] = found
        return found


class _Collector:
    """Walks statements once, filling scopes and the class list."""

    def __init__(self, module: ModuleInfo) -> None:
        self.module = module
        self.in_except = 0

    # -- imports ---------------------------------------------------------------
    def _relative_base(self, level: int) -> str:
        parts = self.module.module_name.split(".") if self.module.module_name else []
        if not self.module.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        return ".".join(parts)

    def import_(self, node: ast.Import, scope: Scope) -> None:
        for alias in node.names:
            if alias.asname:
                scope.bindings[alias.asname] = alias.name
            else:
                root = alias.name.split(".", 1)[0]
                scope.bindings[root] = root

    def import_from(self, node: ast.ImportFrom, scope: Scope) -> None:
        base = node.module or ""
        if node.level:
            prefix = self._relative_base(node.level)
            base = f"{prefix}.{base}" if prefix and base else (prefix or base)
        for alias in node.names:
            if alias.name == "*":
                # Star imports from torch's autograd bring in the Function classes.
                if base in ("torch.autograd", "torch.autograd.function"):
                    scope.bindings.setdefault("Function", f"{base}.Function")
                    if base == "torch.autograd.function":
                        scope.bindings.setdefault("InplaceFunction", f"{base}.InplaceFunction")
                continue
            qualified = f"{base}.{alias.name}" if base else alias.name
            scope.bindings[alias.asname or alias.name] = qualified

    # -- statements ------------------------------------------------------------
    def block(self, body: list[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self.statement(stmt, scope)

    def statement(self, node: ast.stmt, scope: Scope) -> None:
        if isinstance(node, ast.Import):
            self.import_(node, scope)
        elif isinstance(node, ast.ImportFrom):
            self.import_from(node, scope)
        elif isinstance(node, ast.ClassDef):
            self.class_def(node, scope)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function_def(node, scope)
        elif isinstance(node, ast.Assign):
            self.assign(node.targets, node.value, scope)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign([node.target], node.value, scope)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.block(node.body, scope)  # type: ignore[attr-defined]
            self.in_except += 1
            for handler in node.handlers:  # type: ignore[attr-defined]
                self.block(handler.body, scope)
            self.in_except -= 1
            self.block(node.orelse, scope)  # type: ignore[attr-defined]
            self.block(node.finalbody, scope)  # type: ignore[attr-defined]
        else:
            for child in _child_blocks(node):
                self.block(child, scope)

    def assign(self, targets: list[ast.expr], value: ast.expr, scope: Scope) -> None:
        aliased = scope.resolve(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if aliased is not None:
                scope.bindings[target.id] = aliased
            elif not self.in_except:
                # `except ImportError: Function = object` is a fallback; the
                # import in the try body is what the code is written against.
                scope.bindings[target.id] = None

    def function_def(self, node: FunctionNode, scope: Scope) -> None:
        scope.bindings[node.name] = None
        qualname = _join(scope.qualname, node.name)
        inner = Scope(scope, "function", f"{qualname}.<locals>")
        for arg in _all_args(node.args):
            inner.bindings[arg.arg] = None
        self.module.scopes[id(node)] = inner
        self.module.defs.setdefault(qualname, node)
        self.block(node.body, inner)

    def class_def(self, node: ast.ClassDef, scope: Scope) -> None:
        qualname = _join(scope.qualname, node.name)
        key = f"{self.module.module_name}.{qualname}" if self.module.module_name else qualname
        body_scope = Scope(scope, "class", qualname)
        info = ClassInfo(
            name=node.name,
            key=key,
            node=node,
            scope=scope,
            body_scope=body_scope,
            base_names=[scope.resolve(base) for base in node.bases],
            module=self.module,
        )
        self.module.classes.append(info)
        self.module.scopes[id(node)] = body_scope
        scope.bindings[node.name] = key
        self.block(node.body, body_scope)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _all_args(args: ast.arguments) -> Iterator[ast.arg]:
    yield from args.posonlyargs
    yield from args.args
    if args.vararg:
        yield args.vararg
    yield from args.kwonlyargs
    if args.kwarg:
        yield args.kwarg


def _child_blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", ()) or ():
        yield handler.body
    for case in getattr(node, "cases", ()) or ():
        yield case.body


def build_module(path: str, module_name: str, is_package: bool, tree: ast.Module,
                 source: str, *, partial: bool = False) -> ModuleInfo:
    module = ModuleInfo(
        path=path,
        module_name=module_name,
        is_package=is_package,
        tree=tree,
        source=source,
        scope=Scope(None, "module", ""),
        partial=partial,
    )
    _Collector(module).block(tree.body, module.scope)
    return module


def collect_imports(body: list[ast.stmt], scope: Scope, module: ModuleInfo) -> None:
    """Bind the imports of a function body (any block depth) into `scope`."""
    collector = _Collector(module)
    stack = list(body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Import):
            collector.import_(stmt, scope)
        elif isinstance(stmt, ast.ImportFrom):
            collector.import_from(stmt, scope)
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in _child_blocks(stmt):
                stack.extend(block)
