"""Where the scanned tree checks each Function's gradients, and how: what
AGF301 asks, and what the coverage report shows (RULES.md, "The coverage
report").

A check is
- a `gradcheck` / `gradgradcheck` / `opcheck` call whose function runs the
  Function (exercised.py follows it), also through a helper of the project
  that runs one on its parameter (`check_grads(MyFn.apply, inputs)`);
- a reference test: a def of a test file that runs the Function,
  differentiates and compares values (comparisons.py);
- an in-module check: either of those in a library module, inside a def
  named `test*` / `_test*` or an `if __name__ == "__main__":` block (a
  gradcheck call anywhere in it counts too, as it always did).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from autograd_lint.core.files import is_test_path
from autograd_lint.core.model import ClassInfo, FunctionNode, ModuleInfo, Scope
from autograd_lint.core.project import GRADCHECK_READS, Project
from autograd_lint.core.scan import checks_gradients

from .call_sites import CallSites, Site
from .comparisons import (
    ComparingHelpers,
    asserted,
    call_name,
    called_def,
    compares_values,
    differentiates,
    gradient_roots,
    is_comparison,
    mentions,
    own_nodes,
)
from .exercised import (
    MAX_DEPTH,
    Bindings,
    Exercised,
    block_bindings,
    enclosing_classes,
    local_bindings,
)

REFERENCE_TEST = "reference test"
IN_MODULE_CHECK = "in-module check"
_GRADCHECKS = frozenset({"gradcheck", "gradgradcheck", "opcheck"})
_GRADCHECK_WORDS = ("gradcheck", "opcheck")
# project.cache key of the answer: ({(path, class key): GradientCheck}, files read).
GRADIENT_CHECKS = "gradient-checks"


@dataclass(frozen=True)
class GradientCheck:
    """How a Function's gradients are checked: `kind` is "gradcheck",
    "gradgradcheck", "opcheck", "reference test" or "in-module check" (any
    of them in a library module), at `path`:`line` (the call, the test's
    def, or the `__main__` block)."""

    kind: str
    path: str
    line: int


def gradient_checks(project: Project) -> dict[tuple[str, str], GradientCheck]:
    """(file, class key) of every Function whose gradients something in the
    tree checks, with the check: a test's before one in a library module,
    then the first by path and line."""
    return dict(gradient_answer(project)[0])


def gradient_answer(project: Project
                    ) -> tuple[dict[tuple[str, str], GradientCheck], frozenset[str]]:
    """`gradient_checks` and the files the search read (the analysis under
    way reads them too), computed once per project."""
    if GRADIENT_CHECKS not in project.cache:
        with project.reads.frame() as reads:  # every file that checks gradients
            project.reads.read(GRADCHECK_READS)
            found = _Search(project).run()
        project.cache[GRADIENT_CHECKS] = (found, frozenset(reads))
    found, reads = project.cache[GRADIENT_CHECKS]  # type: ignore[misc]
    project.reads.replay(reads)
    return found, reads


@dataclass(frozen=True)
class _Helper:
    """A def of the project that gradchecks what one of its parameters runs."""

    module: ModuleInfo
    node: FunctionNode
    params: tuple[str, ...]  # the parameters whose values it gradchecks
    kind: str  # "gradcheck", "gradgradcheck" or "opcheck"


class _Search:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.best: dict[ClassInfo, GradientCheck] = {}
        self.helpers: dict[int, _Helper] = {}
        self.comparing = ComparingHelpers(project)

    def run(self) -> dict[tuple[str, str], GradientCheck]:
        modules = [m for m in self.project.modules if checks_gradients(m.source, m.path)]
        for module in modules:
            self.project.read(module)
            for node, site in self._reference_tests(module):
                self._record(Exercised(self.project, module).keys(node, site), REFERENCE_TEST,
                             module, node.lineno)
            if any(word in module.source for word in _GRADCHECK_WORDS):
                self._gradcheck_calls(module)
        self._helper_calls(modules)
        return {(info.module.path, info.key): check for info, check in sorted(
            self.best.items(), key=lambda item: (item[0].module.path, item[0].key))}

    def _record(self, infos: set[ClassInfo], kind: str, module: ModuleInfo, line: int) -> None:
        """Keep, per Function, a test's check before an in-module one, then
        the first by path and line."""
        if not is_test_path(module.path):
            kind = IN_MODULE_CHECK
        check = GradientCheck(kind, module.path, line)
        for info in infos:
            kept = self.best.get(info)
            if kept is None or _rank(check) < _rank(kept):
                self.best[info] = check

    # -- gradcheck calls, direct or through helpers ------------------------------
    def _gradcheck_calls(self, module: ModuleInfo) -> None:
        for call, site in CallSites(module, self.project, _GRADCHECK_WORDS):
            kind = _gradcheck_kind(call, site.scope)
            if kind is None:
                continue
            target = call.args[0] if call.args else next(
                (kw.value for kw in call.keywords if kw.arg in ("func", "fn", "op")), None)
            if target is None:
                continue
            self._record(Exercised(self.project, module).keys(target, site), kind, module,
                         call.lineno)
            self._note_helper(module, site, target, kind)

    def _note_helper(self, module: ModuleInfo, site: Site, target: ast.expr, kind: str) -> None:
        """A def that checks what a parameter runs (`gradcheck(fn, inputs)`
        in `check_grads(fn, inputs)`): its callers' arguments are checked."""
        function = site.function
        if function is None or site.in_function_class or id(function) in self.helpers:
            return
        bindings = local_bindings(function)
        params = tuple(name for name, (_, is_param) in bindings.items() if is_param and mentions(
            target, lambda node, n=name: isinstance(node, ast.Name) and node.id == n, bindings))
        if params:
            self.helpers[id(function)] = _Helper(module, function, params, kind)

    def _helper_calls(self, modules: list[ModuleInfo]) -> None:
        """The calls of gradchecking helpers, and of the defs that hand their
        own parameters on to one (to a fixpoint, a few levels deep)."""
        searched: set[int] = set()
        for _ in range(MAX_DEPTH):
            new = {key: helper for key, helper in self.helpers.items() if key not in searched}
            if not new:
                return
            searched |= new.keys()
            names = tuple({helper.node.name for helper in new.values()})
            for module in modules:
                if any(name in module.source for name in names):
                    self._calls_of(module, new, names)

    def _calls_of(self, module: ModuleInfo, helpers: dict[int, _Helper],
                  names: tuple[str, ...]) -> None:
        for call, site in CallSites(module, self.project, names):
            if call_name(call) not in names:
                continue
            found = called_def(self.project, module, site.scope, call.func)
            helper = helpers.get(id(found[1])) if found is not None else None
            if helper is None:
                continue
            for argument in _arguments(call, helper):
                self._record(Exercised(self.project, module).keys(argument, site), helper.kind,
                             module, call.lineno)
                self._note_helper(module, site, argument, helper.kind)

    # -- reference tests and in-module checks ------------------------------------
    def _reference_tests(self, module: ModuleInfo) -> Iterator[tuple[ast.AST, Site]]:
        """The defs that differentiate and compare (in a library module only
        those named `test*` / `_test*`), and `__main__` blocks that do, each
        with the site its names are resolved from."""
        in_tests = is_test_path(module.path)
        function_classes = {id(info.node) for info in module.classes
                            if info in self.project.functions}
        for definition in ast.walk(module.tree):
            if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not in_tests and not definition.name.lstrip("_").startswith("test"):
                continue
            if function_classes and any(id(cls) in function_classes for cls in enclosing_classes(
                    module, definition, self.project.cache)):
                continue
            scope = module.scopes.get(id(definition), module.scope)
            if self._checks(module, scope, definition.body,
                            lambda d=definition: local_bindings(d)):
                yield definition, Site(scope, definition, False, False)
        for block in _main_blocks(module.tree):
            if self._checks(module, module.scope, block.body,
                            lambda b=block: block_bindings(b.body)):
                yield block, Site(module.scope, None, False, False)

    def _checks(self, module: ModuleInfo, scope: Scope, body: list[ast.stmt],
                bindings_of: Callable[[], Bindings]) -> bool:
        """Whether a block differentiates and compares values (its bindings
        read only when an assertion is to be judged)."""
        calls = [node for node in own_nodes(body) if isinstance(node, ast.Call)]
        if not any(differentiates(call, scope) for call in calls):
            return False
        if any(is_comparison(call_name(call)) for call in calls):
            return True
        roots = gradient_roots(scope)
        bindings: Bindings | None = None
        for node in own_nodes(body):
            test = asserted(node)
            if test is None or not compares_values(test):
                continue
            bindings = bindings if bindings is not None else bindings_of()
            if mentions(test, roots, bindings):
                return True  # `assert (a.grad - b.grad).abs().max() < tol`
        return any(call.args and self.comparing.called(call, module, scope) for call in calls)


def _rank(check: GradientCheck) -> tuple[bool, str, int]:
    return check.kind == IN_MODULE_CHECK, check.path, check.line


def _gradcheck_kind(call: ast.Call, scope: Scope) -> str | None:
    """"gradcheck", "gradgradcheck" or "opcheck" for a call of one."""
    name = call_name(call)
    if name not in _GRADCHECKS:
        return None
    func = call.func
    resolved = scope.resolve(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
    return name if resolved is None or resolved.rsplit(".", 1)[-1] in _GRADCHECKS else None


def _arguments(call: ast.Call, helper: _Helper) -> Iterator[ast.expr]:
    """What a call passes for the parameters a helper checks."""
    args = helper.node.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    for index, value in enumerate(call.args):
        if isinstance(value, ast.Starred):
            break
        if index < len(positional) and positional[index] in helper.params:
            yield value
    for keyword in call.keywords:
        if keyword.arg in helper.params:
            yield keyword.value


def _main_blocks(tree: ast.Module) -> Iterator[ast.If]:
    """`if __name__ == "__main__":` blocks at a module's top level."""
    for stmt in tree.body:
        test = stmt.test if isinstance(stmt, ast.If) else None
        if isinstance(test, ast.Compare) and len(test.comparators) == 1 and \
                {ast.unparse(test.left), ast.unparse(test.comparators[0])} == \
                {"__name__", "'__main__'"}:
            yield stmt  # type: ignore[misc]
