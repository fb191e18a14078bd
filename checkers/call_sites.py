"""Every call in a module with what holds where it is written (its scope,
the def around it, grad mode, an expected error), and the Functions a class
expression names: what AGF105 and the gradient-test search (AGF301) read.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from autograd_lint.analysis.torch_api import GRAD_MODE_SETTERS, GRAD_OFF_CONTEXTS
from autograd_lint.core.lines import LINE_BREAK
from autograd_lint.core.model import FunctionNode, ModuleInfo, Scope
from autograd_lint.core.project import FunctionClass, Project
from autograd_lint.core.scan import NAMES_SEARCHED_ONE_BY_ONE

_GRAD_ENABLED = frozenset({"torch.is_grad_enabled", "torch._C.is_grad_enabled",
                           "torch.autograd.grad_mode.is_grad_enabled"})


@dataclass(frozen=True)
class Site:
    """Where a call is: its scope, and what holds around it."""

    scope: Scope
    function: FunctionNode | None  # the innermost enclosing def
    in_function_class: bool  # inside a custom Function's body
    grad_off: bool  # grad mode is certainly off here
    expects_error: bool = False  # inside `with pytest.raises(...)`: a call meant to fail


_WORD = re.compile(r"\w+")


class CallSites:
    """Every call in a module, with its site (scope, class and grad mode).

    names: when given, statements whose source text mentions none of them are
    skipped (a call of interest must name one)."""

    def __init__(self, module: ModuleInfo, project: Project,
                 names: tuple[str, ...] | None = None) -> None:
        self.module = module
        self.project = project
        self.names = names
        self._function_classes = {id(info.node) for info in module.classes
                                  if info in project.functions}
        # Lines as the parser counts them (str.splitlines also breaks at form
        # feeds and other characters that are spaces to Python).
        self._lines = LINE_BREAK.split(module.source) if names is not None else []
        # Many names (a module defining thousands of Functions): a statement
        # mentions one when one of its words is one; a search per name costs
        # names x statements.
        self._words = frozenset(names) if names is not None and \
            len(names) > NAMES_SEARCHED_ONE_BY_ONE and all(n.isidentifier() for n in names) \
            else None

    def __iter__(self) -> Iterator[tuple[ast.Call, Site]]:
        yield from self._block(self.module.tree.body, Site(self.module.scope, None, False, False))

    def _mentions(self, stmt: ast.stmt) -> bool:
        if self.names is None:
            return True
        first = (stmt.decorator_list[0].lineno if getattr(stmt, "decorator_list", None)
                 else stmt.lineno)
        text = "\n".join(self._lines[first - 1: stmt.end_lineno or stmt.lineno])
        if self._words is not None:
            return not self._words.isdisjoint(_WORD.findall(text))
        return any(name in text for name in self.names)

    def _block(self, body: list[ast.stmt], site: Site) -> Iterator[tuple[ast.Call, Site]]:
        for stmt in body:
            if self._mentions(stmt):
                yield from self._statement(stmt, site)
            # `if torch.is_grad_enabled(): return Fn.apply(x)` -> the rest runs with grad off.
            if isinstance(stmt, ast.If) and self._grad_test(stmt.test, site) == "on" and \
                    _terminates(stmt.body):
                site = Site(site.scope, site.function, site.in_function_class, True,
                            site.expects_error)

    def _statement(self, stmt: ast.stmt, site: Site) -> Iterator[tuple[ast.Call, Site]]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from self._expressions([*stmt.decorator_list, *stmt.args.defaults,
                                          *(d for d in stmt.args.kw_defaults if d)], site)
            inner = self.module.scopes.get(id(stmt), site.scope)
            decorated_off = any(self._grad_off_context(d, site.scope) for d in stmt.decorator_list)
            yield from self._block(stmt.body, Site(inner, stmt, site.in_function_class,
                                                   decorated_off))
        elif isinstance(stmt, ast.ClassDef):
            yield from self._expressions([*stmt.decorator_list, *stmt.bases,
                                          *(k.value for k in stmt.keywords)], site)
            inner = self.module.scopes.get(id(stmt), site.scope)
            in_function = site.in_function_class or id(stmt) in self._function_classes
            yield from self._block(stmt.body, Site(inner, site.function, in_function,
                                                   site.grad_off))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from self._expressions([i.context_expr for i in stmt.items], site)
            off = site.grad_off or any(self._grad_off_context(i.context_expr, site.scope)
                                       for i in stmt.items)
            failing = site.expects_error or any(expects_error(i.context_expr)
                                                for i in stmt.items)
            yield from self._block(stmt.body, Site(site.scope, site.function,
                                                   site.in_function_class, off, failing))
        elif isinstance(stmt, ast.If):
            yield from self._expressions([stmt.test], site)
            test = self._grad_test(stmt.test, site)
            body = Site(site.scope, site.function, site.in_function_class,
                        site.grad_off or test == "off", site.expects_error)
            orelse = Site(site.scope, site.function, site.in_function_class,
                          site.grad_off or test == "on", site.expects_error)
            yield from self._block(stmt.body, body)
            yield from self._block(stmt.orelse, orelse)
        else:
            children = list(ast.iter_child_nodes(stmt))
            yield from self._expressions([c for c in children if isinstance(c, ast.expr)], site)
            for child in children:
                if isinstance(child, ast.stmt):
                    yield from self._statement(child, site)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from self._block(child.body, site)

    @staticmethod
    def _expressions(nodes: list[ast.expr], site: Site) -> Iterator[tuple[ast.Call, Site]]:
        for root in nodes:
            for node in ast.walk(root):
                if isinstance(node, ast.Call):
                    yield node, site

    def _grad_off_context(self, expr: ast.expr, scope: Scope) -> bool:
        call = expr if isinstance(expr, ast.Call) else None
        target = call.func if call is not None else expr
        qualified = scope.resolve(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
        if qualified in GRAD_OFF_CONTEXTS:
            return True
        return bool(qualified in GRAD_MODE_SETTERS and call is not None and call.args and
                    isinstance(call.args[0], ast.Constant) and call.args[0].value is False)

    @staticmethod
    def _grad_test(test: ast.expr, site: Site) -> str | None:
        """"on" for `torch.is_grad_enabled()` (or a local bound to it once:
        `enabled = torch.is_grad_enabled()`), "off" for its negation."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test  # type: ignore[attr-defined]
        if isinstance(inner, ast.Name) and site.function is not None:
            inner = only_binding(site.function, inner.id) or inner
        if isinstance(inner, ast.Call) and isinstance(inner.func, (ast.Name, ast.Attribute)) \
                and site.scope.resolve(inner.func) in _GRAD_ENABLED:
            return "off" if negated else "on"
        return None


def only_binding(function: FunctionNode, name: str) -> ast.expr | None:
    """The value a local is bound to, when the def binds it exactly once (not
    a parameter)."""
    args = function.args
    if name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}:
        return None
    values = [node.value for node in ast.walk(function)
              if isinstance(node, ast.Assign) and any(
                  isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    rebound = any(isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For))
                  and isinstance(getattr(node, "target", None), ast.Name)
                  and node.target.id == name for node in ast.walk(function))  # type: ignore[union-attr]
    return values[0] if len(values) == 1 and not rebound else None


def expects_error(expr: ast.expr) -> bool:
    """`pytest.raises(...)`, `self.assertRaises(...)`: the block is meant to fail."""
    call = expr if isinstance(expr, ast.Call) else None
    func = call.func if call is not None else None
    name = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None
    return name in ("raises", "assertRaises", "assertRaisesRegex")



def _terminates(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def function_of(project: Project, module: ModuleInfo, scope: Scope,
                node: ast.expr) -> FunctionClass | None:
    """The custom Function a class expression in `module` names, through
    imports and re-exports."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    return project.function_named(scope.resolve(node), module)


def functions_of(project: Project, module: ModuleInfo, scope: Scope,
                 node: ast.expr) -> list[FunctionClass]:
    """Every custom Function a class expression may name where it is written
    (several when it names a class defined twice, in if/else branches)."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return []
    found = (project.function_named(name, module) for name in scope.resolve_all(node))
    return [fn for fn in found if fn is not None]

