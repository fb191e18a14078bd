"""Which Functions an expression runs: `MyFn.apply`, a lambda or a helper
that calls it (at any depth), a name bound to it, an imported alias (also
through namespace packages and star re-exports), an nn.Module whose forward
applies it, a pytest parameter or fixture listing it. AGF301's gradient-test
search (gradient_tests.py) follows what a check runs with it.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterator

from autograd_lint.core.model import ClassInfo, FunctionNode, ModuleInfo
from autograd_lint.core.project import Project, Resolved

from .call_sites import Site, functions_of

MAX_DEPTH = 6
# Bound to values by a def: (what each name is bound to, whether it is a parameter).
Bindings = dict[str, tuple[list[ast.AST], bool]]
# Where a name in a walked expression leads, resolved once: ("applied",
# Functions), ("local", name), ("reached", Resolved), ("global", module, name).
Edge = tuple


class Exercised:
    """Follows an expression to the Functions it applies, within MAX_DEPTH
    steps (a helper's body, a name's value, a class's body is one step).

    What each expression's names lead to is resolved once (its edges), and
    what each definition reaches is kept per depth left in the project
    cache: the answer is the same whatever order the checks are met in (a
    definition first met deep, where the depth cut it short, is computed
    again when met with more depth left)."""

    def __init__(self, project: Project, module: ModuleInfo) -> None:
        self.project = project
        self.module = module
        # By (file, dotted name, depth): two files may share a module name.
        self.memo: dict[tuple[str, str, int], set[ClassInfo]] = \
            project.cache.setdefault("exercised-memo", {})  # type: ignore[assignment]
        self.edges: dict[tuple[int, int, int], list[Edge]] = \
            project.cache.setdefault("exercised-edges", {})  # type: ignore[assignment]
        self.bindings: dict[int, Bindings] = \
            project.cache.setdefault("exercised-bindings", {})  # type: ignore[assignment]

    def keys(self, target: ast.AST, site: Site, depth: int = 0) -> set[ClassInfo]:
        found: set[ClassInfo] = set()
        if depth > MAX_DEPTH:
            return found
        for edge in self._edges(target, site):
            found |= self._along(edge, site, depth)
        return found

    def _along(self, edge: Edge, site: Site, depth: int) -> set[ClassInfo]:
        kind = edge[0]
        if kind == "applied":
            return edge[1]  # type: ignore[no-any-return]
        if kind == "local":
            return self._local_value(edge[1], site, depth)
        if kind == "global":
            return self._global_value(edge[1], edge[2], depth)
        return self.reached(edge[1], depth)

    def _edges(self, target: ast.AST, site: Site) -> list[Edge]:
        key = (id(target), id(site.scope), id(site.function))
        if key not in self.edges:
            unique: dict[tuple, Edge] = {}
            for edge in self._walk(target, site):
                unique.setdefault(_signature(edge), edge)
            self.edges[key] = list(unique.values())
        return self.edges[key]

    def _walk(self, target: ast.AST, site: Site) -> Iterator[Edge]:
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute) and node.attr == "apply":
                applied = functions_of(self.project, self.module, site.scope, node.value)
                if applied:
                    yield ("applied", {fn.info for fn in applied})
                    continue
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                yield from self._targets(node, site)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                # `dispatch("geglu", ...)`: whatever the project registers as "geglu"
                for registered in registered_under(self.project).get(node.value, ()):
                    yield ("reached", registered)

    def _targets(self, node: ast.Name | ast.Attribute, site: Site) -> Iterator[Edge]:
        """A name: a local binding, a helper def, a class, a module-level
        variable, or `X.apply` elsewhere."""
        if isinstance(node, ast.Name) and site.function is not None and \
                node.id in self.local(site.function):
            yield ("local", node.id)
            return
        qualified_names = site.scope.resolve_all(node)
        for qualified in qualified_names:
            # Loaded when the path leads there: a wrapper module that names no
            # Function is not parsed up front, and the prefilter must not change
            # what a test reaches.
            resolved = self.project.resolve(qualified, self.module, load=True)
            if resolved is not None:
                yield ("reached", resolved)
        if qualified_names == [None] and isinstance(node, ast.Name):
            if node.id in self.module.defs:
                # A def of this module (a def binds no name that resolves).
                yield ("reached", Resolved(f"{self.module.module_name}.{node.id}", self.module))
            else:  # a module-level variable: `FUNCS = [A.apply, B.apply]` (parametrize lists)
                yield ("global", self.module, node.id)

    def _local_value(self, name: str, site: Site, depth: int) -> set[ClassInfo]:
        """What a def's local name may apply, once per def, name and depth (a
        long test binds names from names: followed again each time, the
        chains grow exponentially)."""
        assert site.function is not None
        bindings, is_param = self.local(site.function)[name]

        def compute() -> set[ClassInfo]:
            found: set[ClassInfo] = set()
            for expr in bindings:
                found |= self.keys(expr, site, depth + 1)
            if is_param:  # a pytest parameter: the values its decorators list
                found |= self._parameter_values(name, site, depth)
            return found

        return self._memoised((self.module.path, f"<local {id(site.function)}>{name}"), depth,
                              compute)

    def _memoised(self, key: tuple[str, str], depth: int,
                  compute: Callable[[], set[ClassInfo]]) -> set[ClassInfo]:
        """`compute()` once per key and depth (every step it takes is one
        deeper, so it never meets its own key and depth again)."""
        kept = (*key, depth)
        if kept not in self.memo:
            self.memo[kept] = set()
            self.memo[kept] = compute()
        return self.memo[kept]

    def _parameter_values(self, name: str, site: Site, depth: int) -> set[ClassInfo]:
        """The values pytest gives a test's parameter: the `parametrize`
        decorators of the def and of the classes around it, and a fixture of
        that name in the test's module."""
        assert site.function is not None
        found: set[ClassInfo] = set()
        for decorator in site.function.decorator_list:
            found |= self.keys(decorator, site, depth + 1)
        for cls in enclosing_classes(self.module, site.function, self.project.cache):
            scope = self.module.scopes.get(id(cls), self.module.scope)
            for decorator in cls.decorator_list:
                found |= self.keys(decorator, Site(scope, None, False, False), depth + 1)
        fixture = self.module.defs.get(name)
        if fixture is None and self.module.partial:
            fixture = self.project.complete(self.module).defs.get(name)
        if fixture is not None and fixture is not site.function and any(
                "fixture" in ast.unparse(d) for d in fixture.decorator_list):
            found |= self.reached(Resolved(f"{self.module.module_name}.{name}", self.module),
                                  depth)
        return found

    def _global_value(self, module: ModuleInfo, name: str, depth: int) -> set[ClassInfo]:
        """What a module-level variable lists (`FUNCS = [A.apply, B.apply]`,
        parametrize lists). Not a dict: a lookup by a key known at run time
        (`table[pattern]`) runs one of its values, which one is not known."""
        def compute() -> set[ClassInfo]:
            site = Site(module.scope, None, False, False)
            walker = self if module is self.module else Exercised(self.project, module)
            found: set[ClassInfo] = set()
            for value in module_values(module, name, self.project.cache):
                if not isinstance(value, (ast.Dict, ast.DictComp)):
                    found |= walker.keys(value, site, depth + 1)
            return found

        return self._memoised((module.path, f"<global>{name}"), depth, compute)

    def reached(self, resolved: Resolved, depth: int) -> set[ClassInfo]:
        cls = resolved.cls
        if cls is not None and cls in self.project.functions and resolved.attrs in ((), ("apply",)):
            return {cls}
        if resolved.module is None:
            return set()  # outside the scanned files
        return self._memoised((resolved.module.path, resolved.name), depth,
                              lambda: self._definition(resolved, depth))

    def local(self, function: FunctionNode) -> Bindings:
        if id(function) not in self.bindings:
            self.bindings[id(function)] = local_bindings(function)
        return self.bindings[id(function)]

    def _definition(self, resolved: Resolved, depth: int) -> set[ClassInfo]:
        """The Functions a helper def or a wrapper class (an nn.Module) applies."""
        info = resolved.cls
        if info is not None and not resolved.attrs:
            module, node = whole_class(self.project, info)
            scope = module.scopes.get(id(node), info.scope)
            return Exercised(self.project, module).keys(
                node, Site(scope, None, False, False), depth + 1)
        found = project_def(self.project, resolved)
        if found is None:
            return self._variable_or_star(resolved, depth)
        module, definition = found
        scope = module.scopes.get(id(definition), module.scope)
        return Exercised(self.project, module).keys(
            definition, Site(scope, definition, False, False), depth + 1)

    def _variable_or_star(self, resolved: Resolved, depth: int) -> set[ClassInfo]:
        """A name a module binds to a value (`from ops import FUNCS`), or
        brings in through a star import."""
        module = resolved.module
        local = local_name(module, resolved.name) if module is not None else None
        if module is None or local is None:
            return set()
        if module.partial:  # the sparse parse left it out: a class, a variable
            module = self.project.complete(module)
            prefix = f"{module.module_name}." if module.module_name else ""
            found = module.class_named(prefix + local)
            if found is not None:
                cls, attrs = found
                if cls in self.project.functions and attrs in ((), ("apply",)):
                    return {cls}
                return self._definition(Resolved(resolved.name, module, cls, attrs), depth)
        if module_values(module, local, self.project.cache):
            return self._global_value(module, local, depth)
        star = star_reexport(self.project, resolved)
        return self.reached(star, depth + 1) if star is not None else set()


def registered_under(project: Project) -> dict[str, list[Resolved]]:
    """The defs and classes of the modules that define Functions which a
    decorator registers under a string key (`@register_op("geglu", ...)`,
    `@registry.register("rms_norm")`), by key: a string-keyed registry runs
    one of them when that key is looked up, and which one is not known, so a
    test naming the key may run each. Built from the modules parsed up front,
    so the answer does not depend on the order checks are met in."""
    found = project.cache.get("string-registrations")
    if found is None:
        index: dict[str, list[Resolved]] = {}
        modules = {id(fn.module): fn.module for fn in project.functions.values()
                   if any(fn.module is m for m in project.modules)}
        for module in modules.values():
            whole = project.complete(module)
            for stmt in whole.tree.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    for key in _registration_keys(stmt):
                        index.setdefault(key, []).append(_resolved_member(whole, stmt))
        project.cache["string-registrations"] = found = index
    return found  # type: ignore[return-value]


def _registration_keys(stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    """The string keys a definition's decorators register it under: the first
    positional argument of a decorator call, when it is a string literal."""
    return [decorator.args[0].value for decorator in stmt.decorator_list
            if isinstance(decorator, ast.Call) and decorator.args and
            isinstance(decorator.args[0], ast.Constant) and
            isinstance(decorator.args[0].value, str)]


def _resolved_member(module: ModuleInfo, stmt: ast.stmt) -> Resolved:
    """A module's top-level def or class, as a name resolves to it."""
    prefix = f"{module.module_name}." if module.module_name else ""
    name = prefix + stmt.name  # type: ignore[attr-defined]
    found = module.class_named(name) if isinstance(stmt, ast.ClassDef) else None
    return Resolved(name, module, *found) if found is not None else Resolved(name, module)


def _signature(edge: Edge) -> tuple:
    """What makes two edges the same (a name used many times is followed once)."""
    kind = edge[0]
    if kind == "applied":
        return (kind, *sorted(id(info) for info in edge[1]))
    if kind == "local":
        return edge
    if kind == "global":
        return (kind, id(edge[1]), edge[2])
    resolved = edge[1]
    return (kind, resolved.name, id(resolved.module), id(resolved.cls), resolved.attrs)


def whole_class(project: Project, info: ClassInfo) -> tuple[ModuleInfo, ast.ClassDef]:
    """A class's module and node with all its members: a sparse parse keeps
    only the members that matter to the other rules, and the search must not
    depend on what the prefilter parsed (what a method calls is followed)."""
    if not info.module.partial:
        return info.module, info.node
    every: dict[int, tuple[ModuleInfo, ast.ClassDef]] = \
        project.cache.setdefault("whole-classes", {})  # type: ignore[assignment]
    if id(info) not in every:
        whole = project.complete(info.module)
        node = next((n for n in ast.walk(whole.tree) if isinstance(n, ast.ClassDef) and
                     (n.lineno, n.col_offset, n.name) ==
                     (info.node.lineno, info.node.col_offset, info.name)), info.node)
        every[id(info)] = (whole, node)
    return every[id(info)]


def project_def(project: Project, resolved: Resolved) -> tuple[ModuleInfo, FunctionNode] | None:
    """The def of the project a resolved name leads to, and its module."""
    module = resolved.module
    if module is None or resolved.cls is not None:
        return None
    local = local_name(module, resolved.name)
    definition = module.defs.get(local) if local is not None else None
    if definition is None and local is not None and module.partial:
        module = project.complete(module)  # the sparse parse left the def out
        definition = module.defs.get(local)
    return (module, definition) if definition is not None else None


def local_name(module: ModuleInfo, name: str) -> str | None:
    """`name` inside `module`: after its module name, or, for a file reached
    through namespace packages (folders without `__init__.py`, whose module
    name is the file's alone), after the folders and file the name spells
    (`src.ops.act.swish` in `src/ops/act.py` is `swish`)."""
    found = module.local_name(name)
    if found is not None:
        return found
    path = os.path.abspath(module.path)  # a relative path has no separator before its first folder
    where = path[:-3] if path.endswith(".py") else path
    if module.is_package:
        where = os.path.dirname(where)
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if where.endswith(os.sep + os.sep.join(parts[:cut])):
            return ".".join(parts[cut:])
    return None


def star_reexport(project: Project, resolved: Resolved) -> Resolved | None:
    """Where a name that a module does not define leads through its star
    imports (`from .convolution import *` in a package's `__init__`): the
    first module star-imported that exports it (its `__all__`, else its
    public names) and knows it."""
    module = resolved.module
    local = local_name(module, resolved.name) if module is not None else None
    if module is None or local is None:
        return None
    first = local.split(".", 1)[0]
    for source in _star_sources(module, project.cache):
        target = project.module_named(source, module, load=True)
        if target is None or not _exports(target, first, project.cache):
            continue
        found = project.resolve(f"{source}.{local}", module, load=True)
        if found is not None and found.module is not None and \
                (found.cls is not None or found.module is not module):
            return found
    return None


def _star_sources(module: ModuleInfo, cache: dict[str, object]) -> list[str]:
    """The absolute names of the modules `module` star-imports at its top level."""
    return _index(module, cache)[1]


def _absolute(stmt: ast.ImportFrom, module: ModuleInfo) -> str:
    if not stmt.level:
        return stmt.module or ""
    package = module.module_name.split(".") if module.is_package else \
        module.module_name.split(".")[:-1]
    package = package[: len(package) - (stmt.level - 1)] if stmt.level - 1 <= len(package) else []
    return ".".join([*package, *([stmt.module] if stmt.module else [])])


def _exports(module: ModuleInfo, name: str, cache: dict[str, object]) -> bool:
    """Whether `from module import *` binds `name`: listed in a literal
    `__all__`, else public (no leading underscore)."""
    listed = [value for value in module_values(module, "__all__", cache)
              if isinstance(value, (ast.List, ast.Tuple))]
    if listed:
        return any(isinstance(e, ast.Constant) and e.value == name
                   for value in listed for e in value.elts)
    return not name.startswith("_")


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's statements, with those of its top-level `if`/`try` blocks
    (version guards, fallback imports)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level(stmt.body + stmt.orelse + stmt.finalbody)


def module_values(module: ModuleInfo, name: str, cache: dict[str, object]) -> list[ast.expr]:
    """What a module binds a global name to at its top level."""
    return _index(module, cache)[0].get(name, [])


def _index(module: ModuleInfo, cache: dict[str, object]
           ) -> tuple[dict[str, list[ast.expr]], list[str]]:
    """A module's top-level values by name and the modules it star-imports,
    found once per parse of it and kept in `cache`."""
    every: dict[tuple[str, int], tuple[dict[str, list[ast.expr]], list[str]]] = \
        cache.setdefault("module-values", {})  # type: ignore[assignment]
    key = (module.path, id(module.tree))
    if key not in every:
        values: dict[str, list[ast.expr]] = {}
        stars: list[str] = []
        for stmt in _top_level(module.tree.body):
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and \
                    isinstance(stmt.target, ast.Name):
                values.setdefault(stmt.target.id, []).append(stmt.value)
            elif isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                stars.append(_absolute(stmt, module))
        every[key] = (values, stars)
    return every[key]


def enclosing_classes(module: ModuleInfo, function: FunctionNode,
                      cache: dict[str, object]) -> list[ast.ClassDef]:
    """The classes whose bodies hold a def, innermost first (found once per
    parse of a module and kept in `cache`: a test class's `parametrize`
    decorators give its methods' parameters; a def in a Function's body is
    no test)."""
    every: dict[tuple[str, int], dict[int, list[ast.ClassDef]]] = \
        cache.setdefault("enclosing-classes", {})  # type: ignore[assignment]
    key = (module.path, id(module.tree))
    if key not in every:
        parents: dict[int, list[ast.ClassDef]] = {}
        stack: list[tuple[ast.AST, list[ast.ClassDef]]] = [(module.tree, [])]
        while stack:
            node, classes = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and classes:
                    parents[id(child)] = classes
                inner = [child, *classes] if isinstance(child, ast.ClassDef) else classes
                stack.append((child, inner))
        every[key] = parents
    return every[key].get(id(function), [])


def local_bindings(function: FunctionNode) -> Bindings:
    """What each name is bound to inside a def (assigned values, unpacked
    too, loop iterables, `with` targets, nested defs), and whether it is a
    parameter: one walk of the body."""
    args = function.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return block_bindings(function.body, params)


def block_bindings(body: list[ast.stmt], params: set[str] | None = None) -> Bindings:
    """`local_bindings` of a block of statements (a `__main__` block's
    globals), `params` its parameters."""
    params = params or set()
    values: dict[str, list[ast.AST]] = {}
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values.setdefault(node.name, []).append(node)  # a local helper: its body
            continue
        for target, value in _bound(node):
            for name in _names_in(target):
                values.setdefault(name, []).append(value)
        stack.extend(ast.iter_child_nodes(node))
    names = set(values) | params
    return {name: (values.get(name, []), name in params) for name in names}


def _bound(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of each binding a statement or expression makes."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, ast.NamedExpr):
        return [(node.target, node.value)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [(item.optional_vars, item.context_expr) for item in node.items
                if item.optional_vars is not None]
    return []


def _names_in(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _names_in(element)
    elif isinstance(target, ast.Starred):
        yield from _names_in(target.value)
