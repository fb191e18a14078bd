"""How Functions are used: AGF105 (instantiated / forward called directly) and
AGF301 (no gradcheck exercises the Function, in project scans).

Both look at call sites anywhere in the scanned tree, so names are resolved
through each call site's own scope, and across modules through the project.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from autograd_lint.analysis.function_facts import FunctionFacts, facts_of, only_raises
from autograd_lint.analysis.torch_api import GRAD_MODE_SETTERS, GRAD_OFF_CONTEXTS
from autograd_lint.files import is_test_path
from autograd_lint.fixes import instance_call_to_apply
from autograd_lint.lines import LINE_BREAK
from autograd_lint.model import ClassInfo, FunctionNode, ModuleInfo, Scope, plain_name
from autograd_lint.project import GRADCHECK_READS, FunctionClass, Project, Resolved
from autograd_lint.scan import COMPARE_WORDS, checks_gradients

from .base import Checker, node_range, source_text

_DIRECT_METHODS = frozenset({"forward", "backward", "vjp", "jvp"})
_GRADCHECKS = frozenset({"gradcheck", "gradgradcheck", "opcheck"})
_GRAD_ENABLED = frozenset({"torch.is_grad_enabled", "torch._C.is_grad_enabled",
                           "torch.autograd.grad_mode.is_grad_enabled"})
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Site:
    """Where a call is: its scope, and what holds around it."""

    scope: Scope
    function: FunctionNode | None  # the innermost enclosing def
    in_function_class: bool  # inside a custom Function's body
    grad_off: bool  # grad mode is certainly off here
    expects_error: bool = False  # inside `with pytest.raises(...)`: a call meant to fail


_NAMES_SEARCHED_ONE_BY_ONE = 8
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
            len(names) > _NAMES_SEARCHED_ONE_BY_ONE and all(n.isidentifier() for n in names) \
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
            failing = site.expects_error or any(_expects_error(i.context_expr)
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
            inner = _only_binding(site.function, inner.id) or inner
        if isinstance(inner, ast.Call) and isinstance(inner.func, (ast.Name, ast.Attribute)) \
                and site.scope.resolve(inner.func) in _GRAD_ENABLED:
            return "off" if negated else "on"
        return None


def _only_binding(function: FunctionNode, name: str) -> ast.expr | None:
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


def _expects_error(expr: ast.expr) -> bool:
    """`pytest.raises(...)`, `self.assertRaises(...)`: the block is meant to fail."""
    call = expr if isinstance(expr, ast.Call) else None
    func = call.func if call is not None else None
    name = func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None
    return name in ("raises", "assertRaises", "assertRaisesRegex")


def _plain_call(fn: FunctionClass, method: str, call: ast.Call) -> bool:
    """A direct `forward(None, ...)` of a forward whose ctx parameter is never
    used: the project calls it as a plain function on purpose, outside
    autograd (with a ctx it used, the call would raise)."""
    found = fn.method(method)
    if method != "forward" or found is None or found.node is None or not call.args or \
            not (isinstance(call.args[0], ast.Constant) and call.args[0].value is None):
        return False
    ctx = fn.ctx_name(found)
    return ctx is not None and not any(isinstance(n, ast.Name) and n.id == ctx
                                       for n in ast.walk(found.node)
                                       if not isinstance(n, ast.arguments))


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


class UsageChecker(Checker):
    family = "usage"

    def check_module(self, module: ModuleInfo) -> None:
        if self.enabled("AGF105") and (module.reach is None or module.reach):
            called = _CalledAtOnce(module.tree)
            for call, site in CallSites(module, self.project, _names_used(module)):
                self.agf105_function_instantiated(module, call, site, called)
        if self.enabled("AGF301") and self.project.scan_tree and self.project.has_tests(module):
            pending = self.project.cache.get(PENDING_AGF301)
            if isinstance(pending, list):  # the run answers after its parts (engine_parts)
                self.project.reads.read(GRADCHECK_READS)
                answer = None
            else:
                answer = GradcheckAnswer(gradchecked(self.project), self.project.root_of)
            for fn in self.project.functions_in(module):
                self.agf301_no_gradcheck(fn, answer, pending)

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        """Usage rules work per module (see check_module)."""

    # -- AGF105 ----------------------------------------------------------------
    def agf105_function_instantiated(self, module: ModuleInfo, call: ast.Call, site: Site,
                                     called_at_once: _CalledAtOnce) -> None:
        target = function_of(self.project, module, site.scope, call.func)
        if target is not None:
            # Torch only warns when a Function is instantiated: the defect is
            # calling the instance (it raises), or passing inputs to the class
            # (an instance comes back, nothing is computed).
            at_once = called_at_once.contains(call)
            if not at_once and not call.args and not call.keywords:
                return
            autofix = instance_call_to_apply(call) if at_once else None
            why = ("which is the legacy API: calling the instance raises" if at_once else
                   "which returns an instance of the class instead of computing anything")
            self.reporter.add("AGF105", call, function=target.name, name=target.name,
                              autofix=autofix,
                              what=f"`{source_text(call.func)}(...)` instantiates a Function,",
                              why=why)
            return
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in _DIRECT_METHODS):
            return
        target = function_of(self.project, module, site.scope, func.value)
        if target is None or site.in_function_class or site.grad_off or site.expects_error:
            return
        if _plain_call(target, func.attr, call):
            return  # `Fn.forward(None, x)` of a forward that never touches ctx: a plain function
        self.reporter.add("AGF105", call, function=target.name, name=target.name,
                          what=f"`{source_text(func)}(...)` runs {func.attr} directly,",
                          why="so autograd records nothing and gradients silently stop here")

    # -- AGF301 ----------------------------------------------------------------
    def agf301_no_gradcheck(self, fn: FunctionClass, answer: GradcheckAnswer | None,
                            pending: list[PendingAGF301] | None) -> None:
        if answer is not None and answer.covers(fn.module.path, fn.info.key, fn.name) or \
                self.project.has_subclasses(fn):
            return
        if fn.method("forward") is None or (fn.method("backward") is None and
                                            fn.method("vjp") is None):
            return  # cannot be gradchecked as written (AGF106 / AGF111 say why)
        facts = facts_of(fn)
        if facts.outputs_non_differentiable or facts.deliberate_gradient is not None:
            return  # backward never runs, or differs from the derivative on purpose
        backward = fn.method("backward") or fn.method("vjp")
        if backward is not None and backward.node is not None and only_raises(backward.node):
            return  # inference only: there is no gradient to check
        self.reporter.add("AGF301", fn.node, function=fn.name, name=fn.name)
        if answer is None and pending is not None:
            line, column, _, _ = node_range(fn.node)
            pending.append(PendingAGF301(fn.module.path, line, column, fn.info.key, fn.name))


class GradcheckAnswer:
    """Whether the project's gradient checks cover a Function: its own class
    is exercised, or (backends that stand in for each other keep the public
    class name: a device's copy of `LigerRMSNormFunction` in a module of its
    own) the project's class of that name outside its tests is, which runs
    whichever one the device selects. Classes defined in tests are each
    their own."""

    def __init__(self, exercised: set[tuple[str, str]],
                 root_of: Callable[[str], str | None]) -> None:
        self.exercised = exercised
        self.root_of = root_of
        self.checked_names = {(root_of(path), key.rpartition(".")[2]): path
                              for path, key in exercised if not is_test_path(path)}

    def covers(self, path: str, key: str, name: str) -> bool:
        if (path, key) in self.exercised:
            return True
        namesake = self.checked_names.get((self.root_of(path), name))
        return namesake is not None and namesake != path and not is_test_path(path)


# project.cache[PENDING_AGF301], when set to a list, asks AGF301 to report the
# Functions it cannot clear without the gradcheck answer and to list them:
# a run in parts computes that answer once and settles them (engine_parts).
PENDING_AGF301 = "agf301-pending"


@dataclass(frozen=True)
class PendingAGF301:
    """An AGF301 finding that stands unless the gradcheck answer covers it."""

    path: str
    line: int
    column: int
    key: str
    name: str


# ---------------------------------------------------------------------------
# Which Functions a gradcheck in the scanned tree exercises
# ---------------------------------------------------------------------------
def gradchecked(project: Project) -> set[tuple[str, str]]:
    """(file, class key) of every Function whose gradients something in the
    tree checks: a gradcheck/gradgradcheck/opcheck call, or a reference test
    (a def that differentiates and compares, as kernel projects test against
    a reference implementation), through `MyFn.apply`, a lambda or a helper
    that calls it (at any depth), a name bound to it, an imported alias, a
    pytest parameter listing it. (An incremental run may hand in the answer
    of an earlier run, with the files it read, as `project.cache["gradchecked"]`.)"""
    if "gradchecked" not in project.cache:
        with project.reads.frame() as reads:  # every file that checks gradients
            project.reads.read(GRADCHECK_READS)
            cached: set[ClassInfo] = set()
            for module in project.modules:
                if not checks_gradients(module.source, module.path):
                    continue
                project.read(module)
                for test, scope in _reference_tests(module, project):
                    cached |= _Exercised(project, module).keys(
                        test, Site(scope, test, False, False))
                if not any(word in module.source for word in _GRADCHECKS):
                    continue
                for call, site in CallSites(module, project, _GRADCHECK_WORDS):
                    if _is_gradcheck(call, site.scope):
                        target = call.args[0] if call.args else next(
                            (kw.value for kw in call.keywords if kw.arg in ("func", "fn", "op")),
                            None)
                        if target is not None:
                            cached |= _Exercised(project, module).keys(target, site)
        project.cache["gradchecked"] = ({(info.module.path, info.key) for info in cached},
                                        frozenset(reads))
    found, reads = project.cache["gradchecked"]  # type: ignore[misc]
    project.reads.replay(reads)
    return found


_GRADCHECK_WORDS = ("gradcheck", "opcheck")


def _reference_tests(module: ModuleInfo, project: Project
                     ) -> Iterator[tuple[FunctionNode, Scope]]:
    """The defs of a test file, outside Function classes, that differentiate
    (`.backward(`, `torch.autograd.grad(`) and compare (`allclose`,
    `assert_close`, `assertEqual` and project helpers named like them)."""
    if not is_test_path(module.path):
        return
    differentiating: dict[int, Site] = {}
    comparing: set[int] = set()
    for call, site in CallSites(module, project, _REFERENCE_WORDS):
        if site.function is None or site.in_function_class:
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if isinstance(func, ast.Attribute) and (
                name == "backward" or name == "grad" and "autograd" in ast.unparse(func.value)):
            differentiating[id(site.function)] = site
        elif _is_comparison(name):
            comparing.add(id(site.function))
    for key, site in differentiating.items():
        if key in comparing:
            assert site.function is not None
            yield site.function, site.scope


# A statement of a reference test names one of these (CallSites skips the rest).
_REFERENCE_WORDS = ("backward", "grad", *COMPARE_WORDS)


def _is_comparison(name: str) -> bool:
    """`torch.allclose`, `torch.testing.assert_close`, `self.assertEqual`,
    `np.testing.assert_allclose`, `assert_verbose_allclose`, `gems_assert_close`,
    `assert_similar`, `self.assertLess(error, tol)`, and error metrics that
    quantization tests assert on (`compute_error(ref.grad, x.grad)`, `sqnr`)."""
    lowered = name.lower()
    return "allclose" in lowered or "isclose" in lowered or lowered == "equal" or \
        "similar" in lowered or "snr" in lowered or lowered.endswith("_error") or \
        "assert" in lowered and any(
            word in lowered for word in ("close", "equal", "less", "greater"))


class _CalledAtOnce:
    """Calls whose result is called right away (`Fn()` in `Fn()(x)`), found
    on first use: most modules never ask."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._ids: set[int] | None = None

    def contains(self, call: ast.Call) -> bool:
        if self._ids is None:
            self._ids = {id(node.func) for node in ast.walk(self.tree)
                         if isinstance(node, ast.Call) and isinstance(node.func, ast.Call)}
        return id(call) in self._ids


def _names_used(module: ModuleInfo) -> tuple[str, ...] | None:
    """The Function names a module's calls could use: those in its reach and
    module-level aliases of them. None: unknown (no project scan judged it)."""
    if module.reach is None:
        return None
    aliases = {local for local, target in module.top_bindings.items()
               if target is not None and plain_name(target).rsplit(".", 1)[-1] in module.reach}
    return tuple(module.reach | aliases)


def _is_gradcheck(call: ast.Call, scope: Scope) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _GRADCHECKS:
        return False
    resolved = scope.resolve(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
    return resolved is None or resolved.rsplit(".", 1)[-1] in _GRADCHECKS


class _Exercised:
    """Follows a gradcheck target to the Functions it applies.

    Results are memoised per definition in the project cache and each def's
    local bindings are indexed once, so a large test suite costs one pass."""

    def __init__(self, project: Project, module: ModuleInfo) -> None:
        self.project = project
        self.module = module
        # By (file, dotted name): two files may share a module name.
        self.memo: dict[tuple[str, str], set[ClassInfo]] = \
            project.cache.setdefault("exercised-memo", {})  # type: ignore[assignment]
        self.bindings: dict[int, dict[str, tuple[list[ast.AST], bool]]] = \
            project.cache.setdefault("exercised-bindings", {})  # type: ignore[assignment]

    def keys(self, target: ast.AST, site: Site, depth: int = 0) -> set[ClassInfo]:
        found: set[ClassInfo] = set()
        if depth > _MAX_DEPTH:
            return found
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute) and node.attr == "apply":
                applied = functions_of(self.project, self.module, site.scope, node.value)
                if applied:
                    found.update(fn.info for fn in applied)
                    continue
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                found |= self._follow(node, site, depth)
        return found

    def _follow(self, node: ast.Name | ast.Attribute, site: Site, depth: int) -> set[ClassInfo]:
        """A name: a local binding, a helper def, a class, or `X.apply` elsewhere."""
        if isinstance(node, ast.Name) and site.function is not None:
            local = self._local(site.function).get(node.id)
            if local is not None:
                return self._local_value(node.id, local, site, depth)
        found = set()
        qualified_names = site.scope.resolve_all(node)
        for qualified in qualified_names:
            # Loaded when the path leads there: a wrapper module that names no
            # Function is not parsed up front, and the prefilter must not change
            # what a test reaches.
            resolved = self.project.resolve(qualified, self.module, load=True)
            if resolved is not None:
                found |= self._reached(resolved, depth)
        if qualified_names == [None] and isinstance(node, ast.Name) and \
                node.id in self.module.defs:
            # A def of this module (a def binds no name that resolves).
            found |= self._reached(Resolved(f"{self.module.module_name}.{node.id}",
                                            self.module), depth)
        return found

    def _local_value(self, name: str, local: tuple[list[ast.AST], bool], site: Site,
                     depth: int) -> set[ClassInfo]:
        """What a def's local name may apply, once per def and name (a long
        test binds names from names: followed again each time, the chains
        grow exponentially)."""
        assert site.function is not None
        key = (self.module.path, f"<local {id(site.function)}>{name}")
        if key not in self.memo:
            self.memo[key] = set()  # a cycle through this name adds nothing
            bindings, is_param = local
            found: set[ClassInfo] = set()
            for expr in bindings:
                found |= self.keys(expr, site, depth + 1)
            if is_param:  # a pytest parameter: the values listed in the decorators
                for decorator in site.function.decorator_list:
                    found |= self.keys(decorator, site, depth + 1)
            self.memo[key] = found
        return self.memo[key]

    def _reached(self, resolved: Resolved, depth: int) -> set[ClassInfo]:
        cls = resolved.cls
        if cls is not None and cls in self.project.functions and resolved.attrs in ((), ("apply",)):
            return {cls}
        if resolved.module is None:
            return set()  # outside the scanned files
        key = (resolved.module.path, resolved.name)
        if key not in self.memo:
            self.memo[key] = set()  # a cycle through this name adds nothing
            self.memo[key] = self._definition(resolved, depth)
        return self.memo[key]

    def _local(self, function: FunctionNode) -> dict[str, tuple[list[ast.AST], bool]]:
        if id(function) not in self.bindings:
            self.bindings[id(function)] = _local_bindings(function)
        return self.bindings[id(function)]

    def _definition(self, resolved: Resolved, depth: int) -> set[ClassInfo]:
        """The Functions a helper def or a wrapper class (an nn.Module) applies."""
        info = resolved.cls
        if info is not None and not resolved.attrs:
            scope = info.module.scopes.get(id(info.node), info.scope)
            return _Exercised(self.project, info.module).keys(
                info.node, Site(scope, None, False, False), depth + 1)
        module = resolved.module
        assert module is not None
        local = module.local_name(resolved.name)
        definition = module.defs.get(local) if local is not None else None
        if definition is None and local is not None and module.partial:
            module = self.project.complete(module)  # the sparse parse left the def out
            definition = module.defs.get(local)
        if definition is None:
            return set()
        scope = module.scopes.get(id(definition), module.scope)
        return _Exercised(self.project, module).keys(
            definition, Site(scope, definition, False, False), depth + 1)


def _local_bindings(function: FunctionNode) -> dict[str, tuple[list[ast.AST], bool]]:
    """What each name is bound to inside a def (assigned values, loop iterables,
    nested defs), and whether it is a parameter: one walk of the body."""
    args = function.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    values: dict[str, list[ast.AST]] = {}
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            values.setdefault(node.name, []).append(node)  # a local helper: its body
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(node.iter)
        elif isinstance(node, ast.NamedExpr):
            values.setdefault(node.target.id, []).append(node.value)
        stack.extend(ast.iter_child_nodes(node))
    names = set(values) | params
    return {name: (values.get(name, []), name in params) for name in names}
