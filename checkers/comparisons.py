"""What a reference test does (AGF301): differentiate, and compare values.

A comparison is a call named like one (`torch.allclose`, `assert_close`,
`self.assertEqual`, `assert_verbose_allclose`, error metrics), a plain
`assert` of an ordering or equality of gradients (`assert (a.grad -
b.grad).abs().max() < tol`), or a call of a function of the project that
compares its own arguments, whatever its name (`check(x.grad, ref.grad)`
where `check` asserts `allclose` of its parameters)."""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from autograd_lint.core.model import FunctionNode, ModuleInfo, Scope
from autograd_lint.core.project import Project

from .exercised import MAX_DEPTH, Bindings, local_bindings, project_def

# Orderings and equalities compare values; `is`, `in` and `!=` test something else.
_VALUE_COMPARISONS = (ast.Eq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# Attributes and methods that read a tensor's metadata, not its values.
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "size", "dim", "numel", "stride",
                       "is_contiguous", "requires_grad", "grad_fn", "is_leaf", "layout",
                       "names", "storage_offset", "data_ptr", "element_size"})
_NOT_VALUES = frozenset({"len", "isinstance", "type", "id", "hasattr", "callable"})
# Calls whose first argument is asserted: `self.assertTrue(err < tol)`.
_TRUTH_ASSERTS = frozenset({"assertTrue", "assert_", "_assert"})
_AUTOGRAD_GRADS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
Roots = Callable[[ast.expr], bool]


def call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def is_comparison(name: str) -> bool:
    """`torch.allclose`, `torch.testing.assert_close`, `self.assertEqual`,
    `np.testing.assert_allclose`, `assert_verbose_allclose`, `gems_assert_close`,
    `assert_similar`, `self.assertLess(error, tol)`, and error metrics that
    quantization tests assert on (`compute_error(ref.grad, x.grad)`, `sqnr`)."""
    lowered = name.lower()
    return "allclose" in lowered or "isclose" in lowered or lowered == "equal" or \
        "similar" in lowered or "snr" in lowered or lowered.endswith("_error") or \
        "assert" in lowered and any(
            word in lowered for word in ("close", "equal", "less", "greater"))


def differentiates(call: ast.Call, scope: Scope) -> bool:
    """`.backward(...)`, `torch.autograd.grad(...)` (also imported by name)."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "backward":
        return True
    if call_name(call) not in ("grad", "backward"):
        return False
    if isinstance(func, ast.Attribute) and "autograd" in ast.unparse(func.value):
        return True
    return isinstance(func, (ast.Name, ast.Attribute)) and scope.resolve(func) in _AUTOGRAD_GRADS


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a block, without the defs and classes nested in it
    (their code runs when called, and is judged on its own)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def asserted(node: ast.AST) -> ast.expr | None:
    """What an `assert` statement or an `assertTrue(...)` call asserts."""
    if isinstance(node, ast.Assert):
        return node.test
    if isinstance(node, ast.Call) and call_name(node) in _TRUTH_ASSERTS and node.args:
        return node.args[0]
    return None


def compares_values(test: ast.expr) -> bool:
    """An ordering or equality (`err < tol`, `(a == b).all()`) in an assertion."""
    return any(isinstance(node, ast.Compare) and
               all(isinstance(op, _VALUE_COMPARISONS) for op in node.ops)
               for node in ast.walk(test))


def mentions(expr: ast.AST, roots: Roots, bindings: Bindings,
             seen: frozenset[str] = frozenset()) -> bool:
    """Whether an expression's value depends on a root (a gradient, a
    parameter), directly or through the locals it names; reads of metadata
    (`.shape`, `len(...)`) are no dependence on the values."""
    if len(seen) > MAX_DEPTH:
        return False
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.expr) and roots(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr in _METADATA or \
                isinstance(node, ast.Call) and call_name(node) in _NOT_VALUES:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id not in seen:
            values, _ = bindings.get(node.id, ([], False))
            if any(mentions(v, roots, bindings, seen | {node.id}) for v in values):
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def gradient_roots(scope: Scope) -> Roots:
    """A gradient's value: `x.grad`, or what `torch.autograd.grad` returns."""
    def root(node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return isinstance(node.ctx, ast.Load)
        return isinstance(node, ast.Call) and call_name(node) == "grad" and \
            differentiates(node, scope)
    return root


class ComparingHelpers:
    """Functions of the project that compare their own arguments, whatever
    their name; each def judged once per project."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.memo: dict[int, bool] = \
            project.cache.setdefault("comparing-helpers", {})  # type: ignore[assignment]

    def called(self, call: ast.Call, module: ModuleInfo, scope: Scope) -> bool:
        """Whether a call runs a function of the project that compares its arguments."""
        found = called_def(self.project, module, scope, call.func)
        return found is not None and self.compares(*found)

    def compares(self, module: ModuleInfo, definition: FunctionNode) -> bool:
        if id(definition) not in self.memo:
            self.memo[id(definition)] = False  # a recursive helper adds nothing
            self.memo[id(definition)] = self._compares(module, definition)
        return self.memo[id(definition)]

    def _compares(self, module: ModuleInfo, definition: FunctionNode) -> bool:
        args = definition.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}
        bindings = local_bindings(definition)

        def parameter(node: ast.expr) -> bool:
            return isinstance(node, ast.Name) and node.id in params

        scope = module.scopes.get(id(definition), module.scope)
        for node in own_nodes(definition.body):
            test = asserted(node)
            if test is not None and compares_values(test) and mentions(test, parameter, bindings):
                return True
            if not isinstance(node, ast.Call):
                continue
            passed = [*node.args, *(k.value for k in node.keywords)]
            if not any(mentions(arg, parameter, bindings) for arg in passed):
                continue
            if is_comparison(call_name(node)) or self.called(node, module, scope):
                return True
        return False


def called_def(project: Project, module: ModuleInfo, scope: Scope,
               func: ast.expr) -> tuple[ModuleInfo, FunctionNode] | None:
    """The def of the project a call's function names: imported, or defined
    in the module (a def binds no name that resolves)."""
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return None
    qualified = scope.resolve(func)
    if qualified is None:
        definition = module.defs.get(func.id) if isinstance(func, ast.Name) else None
        if definition is None and isinstance(func, ast.Name) and module.partial:
            module = project.complete(module)
            definition = module.defs.get(func.id)
        return (module, definition) if definition is not None else None
    if qualified.startswith("torch.") or "." not in qualified:
        return None  # torch's own, or a builtin
    resolved = project.resolve(qualified, module, load=True)
    return project_def(project, resolved) if resolved is not None else None
