"""Module model: imports, aliases, scopes and class definitions of one file.

One pass over a module's statements records, per scope, which local names are
bound to which qualified names (`from torch.autograd import Function as F`
binds `F` to `torch.autograd.Function`), and every class definition with its
bases resolved the same way. Whether a class is a custom Function is decided
later, over all scanned modules (see project.py).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

# The classes a custom Function derives from (RULES.md "What counts").
FUNCTION_BASES = frozenset({
    "torch.autograd.Function",
    "torch.autograd.function.Function",
    "torch.autograd.function.InplaceFunction",
})
# Methods of a Function that autograd calls (all staticmethods in modern code).
SPECIAL_METHODS = ("forward", "backward", "setup_context", "jvp", "vjp", "vmap")

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class Binding(NamedTuple):
    """One binding of a name that was bound more than once in a scope."""

    line: int  # where it happens (0: before anything else we track)
    value: str | None
    branches: tuple[tuple[int, int], ...]  # line ranges of the conditional blocks around it


class Scope:
    """Names bound in one module, class or function body.

    A binding maps a local name to a qualified name ("torch.autograd") or to
    None when the name is bound to something we cannot follow (a def, a
    parameter, an arbitrary assignment): None shadows outer bindings.

    `bindings` holds each name's last binding. A name that a class statement
    binds also keeps every binding in `history`, so that a reference resolves
    to the class visible where it is written: `class Func` twice in one test
    is two classes, and each `Func.apply` means the one defined above it.
    """

    __slots__ = ("parent", "kind", "bindings", "qualname", "history")

    def __init__(self, parent: Scope | None, kind: str, qualname: str) -> None:
        self.parent = parent
        self.kind = kind  # "module" | "class" | "function"
        self.bindings: dict[str, str | None] = {}
        self.qualname = qualname
        self.history: dict[str, list[Binding]] | None = None

    def bind(self, name: str, value: str | None, line: int = 0,
             branches: tuple[tuple[int, int], ...] = (), *, is_class: bool = False) -> None:
        history = self.history
        if is_class or (history is not None and name in history):
            if history is None:
                history = self.history = {}
            entries = history.get(name)
            if entries is None:
                entries = history[name] = []
                if name in self.bindings:  # bound before, where we did not note
                    entries.append(Binding(0, self.bindings[name], ()))
            entries.append(Binding(line, value, branches))
        self.bindings[name] = value

    def lookup(self, name: str) -> tuple[bool, str | None]:
        """(found, qualified name or None) following Python's scoping rules."""
        found, values = self._find(name, None)
        return found, values[0]

    def _find(self, name: str, line: int | None) -> tuple[bool, list[str | None]]:
        """(found, values): with `line`, every binding of a rebound class name
        that may be the one visible there, the most recent first: the last
        binding above the line, and earlier ones while that one sits in a
        conditional block that does not hold the line (`if a: class F ...
        else: class F ...`, then `F`)."""
        scope: Scope | None = self
        first = True
        deferred = False  # a def between the reference and the binding
        while scope is not None:
            # Class bodies are not visible from functions nested inside them.
            if (first or scope.kind != "class") and name in scope.bindings:
                history = scope.history
                entries = history.get(name) if history is not None else None
                if entries is None or len(entries) < 2 or line is None:
                    return True, [scope.bindings[name]]
                if deferred and scope.kind != "function":
                    # A function body runs when called: after the module (or
                    # class body) around it has bound its final names.
                    line = _END
                return True, _visible(entries, line) or [scope.bindings[name]]
            deferred = deferred or scope.kind == "function"
            first = False
            scope = scope.parent
        return False, [None]

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name of a dotted expression, or None."""
        return self.resolve_all(node)[0]

    def resolve_all(self, node: ast.expr) -> list[str | None]:
        """`resolve` for every binding that may be visible at the expression
        (several only for a rebound class name, see `_find`)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Subscript):  # Generic[...] bases
            return self.resolve_all(node.value) if not parts else [None]
        if not isinstance(node, ast.Name):
            return [None]
        found, values = self._find(node.id, node.lineno)
        if not found:
            # An unimported `torch` is still torch (star imports, notebooks).
            values = [node.id if node.id == "torch" else None]
        suffix = list(reversed(parts))
        return [".".join([value, *suffix]) if value is not None else None for value in values]


_END = 1 << 62  # a line after every other


def _visible(entries: list[Binding], line: int) -> list[str | None]:
    found: list[str | None] = []
    for entry in reversed(entries):
        if entry.line > line:
            continue
        found.append(entry.value)
        if all(start <= line <= end for start, end in entry.branches):
            break  # this binding runs on every path to the line
    return found


@dataclass(eq=False)  # identity: two definitions are two classes, whatever their names
class ClassInfo:
    """A class definition anywhere in a module."""

    name: str
    # Unique within the module: the module-qualified name, like __qualname__
    # ("pkg.mod.outer.<locals>.Local"), with "@line" added to a class that
    # rebinds the name of an earlier class in the same scope.
    key: str
    node: ast.ClassDef
    scope: Scope  # the scope the class statement runs in
    body_scope: Scope
    base_names: list[str | None]  # resolved qualified names of the bases (None: unknown)
    module: ModuleInfo
    # The line where a later statement binds the class's name again in the
    # same scope: the module attribute then names another object.
    rebound_at: int | None = None

    @property
    def line(self) -> int:
        return self.node.lineno

    @property
    def qualname(self) -> str:
        """Python's __qualname__ within the module ("Outer.Inner")."""
        local = self.key[len(self.module.module_name) + 1:] if self.module.module_name \
            else self.key
        return plain_name(local)


_REBINDING_MARK = re.compile(r"@\d+(?:_\d+)?")


def plain_name(dotted: str) -> str:
    """A dotted name as Python spells it: without the marks class keys give a
    class that rebinds an earlier one's name (`mod.F@30` is `mod.F`)."""
    return _REBINDING_MARK.sub("", dotted)


@dataclass(eq=False)  # identity: one object per parse of a file
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
    # The directory Python must have on sys.path to import `module_name` (for
    # a file outside any package: its own directory). Two files may share a
    # module name; each resolves imports from its own root first.
    import_root: str = ""
    class_by_key: dict[str, ClassInfo] = field(default_factory=dict)

    @property
    def top_bindings(self) -> dict[str, str | None]:
        return self.scope.bindings

    def same_file(self, other: ModuleInfo) -> bool:
        """Whether `other` was parsed from this module's file: a sparse parse
        and the whole parse that completes it are two objects of one file."""
        return other is self or other.path == self.path

    def class_named(self, name: str) -> tuple[ClassInfo, tuple[str, ...]] | None:
        """The class of this module a dotted name (a class key, as bindings
        hold them) starts with, and the attributes after it (`apply`)."""
        if self.module_name and not name.startswith(self.module_name + "."):
            return None
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            info = self.class_by_key.get(".".join(parts[:cut]))
            if info is not None:
                return info, tuple(parts[cut:])
        return None

    def local_name(self, name: str) -> str | None:
        """`name` inside this module ("pkg.mod.helper" -> "helper"), or None."""
        prefix = self.module_name + "."
        return name[len(prefix):] if name.startswith(prefix) else None

    def adopt_classes(self, partial: ModuleInfo) -> None:
        """Reuse the class objects of a sparse parse of the same file for the
        classes it holds, so that a class keeps one identity in a project."""
        earlier = {(info.node.lineno, info.node.col_offset): info for info in partial.classes}
        for index, info in enumerate(self.classes):
            same = earlier.get((info.node.lineno, info.node.col_offset))
            if same is not None and same.name == info.name:
                self.classes[index] = same
                self.class_by_key[info.key] = same


def module_name_for(path: str) -> tuple[str, bool]:
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

    def import_root(self, path: str) -> str:
        """The directory above the file's top package (the file's own
        directory outside packages): what `sys.path` needs to import it, and
        what pytest's rootdir-less `prepend` import mode inserts."""
        import os

        directory = os.path.dirname(path)
        root = os.path.abspath(directory or os.curdir)
        for _ in self.package_of_directory(directory):
            root = os.path.dirname(root)
        return root

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
        # Line ranges of the conditional blocks (if/else, loops, except, case)
        # around the statement being collected, within its scope.
        self.branches: tuple[tuple[int, int], ...] = ()

    def bind(self, scope: Scope, name: str, value: str | None, node: ast.AST, *,
             is_class: bool = False) -> None:
        scope.bind(name, value, getattr(node, "lineno", 0), self.branches, is_class=is_class)
        history = scope.history
        if history is not None and name in history and len(history[name]) > 1:
            self._rebinding(history[name], node)

    def _rebinding(self, entries: list[Binding], node: ast.AST) -> None:
        """A name bound again: the class it named is no longer the module's
        attribute of that name (the dynamic mode cannot import it by name)."""
        earlier = entries[-2].value
        info = self.module.class_by_key.get(earlier) if earlier is not None else None
        if info is not None and info.rebound_at is None:
            info.rebound_at = getattr(node, "lineno", None)

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
                self.bind(scope, alias.asname, alias.name, node)
            else:
                root = alias.name.split(".", 1)[0]
                self.bind(scope, root, root, node)

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
            self.bind(scope, alias.asname or alias.name, qualified, node)

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
                self.conditional_block(handler.body, scope)
            self.in_except -= 1
            if node.orelse:  # type: ignore[attr-defined]
                self.conditional_block(node.orelse, scope)  # type: ignore[attr-defined]
            self.block(node.finalbody, scope)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.block(node.body, scope)
        else:
            for child in _child_blocks(node):
                self.conditional_block(child, scope)

    def conditional_block(self, body: list[ast.stmt], scope: Scope) -> None:
        """A block that may not run (or run several times) when its statement does."""
        outer = self.branches
        self.branches = (*outer, (body[0].lineno, body[-1].end_lineno or body[-1].lineno))
        try:
            self.block(body, scope)
        finally:
            self.branches = outer

    def assign(self, targets: list[ast.expr], value: ast.expr, scope: Scope) -> None:
        aliased = scope.resolve(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if aliased is not None:
                self.bind(scope, target.id, aliased, target)
            elif not self.in_except:
                # `except ImportError: Function = object` is a fallback; the
                # import in the try body is what the code is written against.
                self.bind(scope, target.id, None, target)

    def function_def(self, node: FunctionNode, scope: Scope) -> None:
        self.bind(scope, node.name, None, node)
        qualname = _join(scope.qualname, node.name)
        inner = Scope(scope, "function", f"{qualname}.<locals>")
        for arg in _all_args(node.args):
            inner.bindings[arg.arg] = None
        self.module.scopes[id(node)] = inner
        self.module.defs[qualname] = node  # a later def of the name is the one bound
        self.body(node.body, inner)

    def class_def(self, node: ast.ClassDef, scope: Scope) -> None:
        qualname = _join(scope.qualname, node.name)
        key = f"{self.module.module_name}.{qualname}" if self.module.module_name else qualname
        if key in self.module.class_by_key:  # the name of an earlier class, bound again
            qualname = f"{qualname}@{node.lineno}"
            if f"{key}@{node.lineno}" in self.module.class_by_key:
                qualname = f"{qualname}_{node.col_offset}"
            key = f"{self.module.module_name}.{qualname}" if self.module.module_name \
                else qualname
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
        self.module.class_by_key[key] = info
        self.module.scopes[id(node)] = body_scope
        self.bind(scope, node.name, key, node, is_class=True)
        self.body(node.body, body_scope)

    def body(self, body: list[ast.stmt], scope: Scope) -> None:
        """A def's or class's body: a new scope, conditional from its own start."""
        outer = self.branches
        self.branches = ()
        try:
            self.block(body, scope)
        finally:
            self.branches = outer


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def parameter_defaults(node: FunctionNode) -> dict[str, ast.expr]:
    """Default value of each positional parameter that has one."""
    args = [*node.args.posonlyargs, *node.args.args]
    defaults = node.args.defaults
    return {a.arg: d for a, d in zip(args[len(args) - len(defaults):], defaults, strict=False)}


def all_parameter_defaults(node: FunctionNode) -> dict[str, ast.expr]:
    """Default value of each parameter that has one, keyword-only ones included."""
    found = parameter_defaults(node)
    found.update({a.arg: d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults,
                                           strict=True) if d is not None})
    return found


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
                 source: str, *, partial: bool = False, import_root: str = "") -> ModuleInfo:
    module = ModuleInfo(
        path=path,
        module_name=module_name,
        is_package=is_package,
        tree=tree,
        source=source,
        scope=Scope(None, "module", ""),
        partial=partial,
        import_root=import_root,
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
