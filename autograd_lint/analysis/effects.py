"""Effect summaries of helpers: which parameters a helper changes in place.

A Function's forward or backward often writes through a helper: a wrapper
that launches a Triton kernel storing into `q` and `k`, a function that
calls `dist.all_reduce(grad)` or `grad.mul_()`. For every function the
interpreter calls (a def of the module, a staticmethod of a class, an
imported helper of a scanned module) a summary (summaries.py) is computed
once per project and applied at each call site as in-place changes of the
arguments passed there (callees.py), so the in-place rules (AGF005/006/007)
see through it.

- A Python function: the interpreter runs over its body with each parameter
  as a root of its own; its in-place events on those roots (directly, on
  views and aliases, through in-place collectives, through callees' own
  summaries) are the summary. A call to a function whose summary is being
  computed (recursion) contributes nothing.
- A `@triton.jit` kernel: the pointer parameters whose addresses reach a
  store (triton_kernels.py), specialized to each launch's literal arguments.
- A custom op (`torch.ops.ns.name(...)`): what its decorated def's body
  writes, of the arguments it declares it mutates (custom_ops.py); a
  declaration alone is no write (over-declaring is legal).

Unknown callees stay opaque: no summary, no finding.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..core.model import FunctionNode, ModuleInfo, Scope
from .custom_ops import CustomOp, declared_ops
from .events import LeftAutograd, MethodFacts, Mutation, Return
from .guards import (
    UNCONDITIONAL,
    Binding,
    Path,
    call_binding,
    ruled_out,
    statement_guards,
)
from .interpreter import Interpreter
from .markers import param_names
from .summaries import Effect, Leave, Result, Summary, Write
from .syntax import is_hashable, parameters_of
from .triton_kernels import is_kernel, kernel_writes
from .values import Value

if TYPE_CHECKING:
    from ..core.project import Project


# Libraries whose functions are never summarized: torch's in-place API is
# known by name, and following `torch.*` into a torch checkout costs parses.
_LIBRARIES = frozenset({"torch", "triton", "numpy", "math", "functools", "operator",
                        "builtins", "typing", "os", "sys", "warnings", "collections"})


class Effects:
    """The summaries of one project's functions, computed on demand, once."""

    def __init__(self, project: Project | None) -> None:
        self.project = project
        # Memoised with the files each was computed from (see DependencyLog).
        self._done: dict[object, tuple[Effect, frozenset[str]]] = {}
        self._calls: dict[tuple[int, int, tuple[tuple[int, object], ...]],
                          tuple[Summary | None, frozenset[str]]] = {}
        self._running: set[int] = set()
        self._ops: dict[int, dict[str, CustomOp]] = {}
        self._launches: dict[tuple[int, tuple[tuple[str, object], ...]], tuple[Write, ...]] = {}
        self._tested: dict[int, frozenset[str]] = {}  # per def: parameters its branches test

    # -- call sites ------------------------------------------------------------
    def at_call(self, call: ast.Call, scope: Scope, module: ModuleInfo,
                known: dict[int, object] | None = None) -> Summary | None:
        """The summary for a call (`helper(q, k)`, `kernel[grid](x, out)`), or None.
        `known`: argument values (by the argument's node id) a specialized run
        of the caller decided; they count as literal arguments."""
        # A call is met again in loop passes and in each interpretation of its method.
        key = (id(call), id(module), tuple(sorted(known.items())) if known else ())
        if key not in self._calls:
            self._calls[key] = self._remembered(self._at_call, call, scope, module, known)
        summary, reads = self._calls[key]
        self._replay(reads)
        return summary

    def _remembered(self, compute, *args):  # type: ignore[no-untyped-def]
        """compute(*args), and the files it read (none without a project)."""
        if self.project is None:
            return compute(*args), frozenset()
        with self.project.reads.frame() as reads:
            value = compute(*args)
        return value, frozenset(reads)

    def _replay(self, reads: frozenset[str]) -> None:
        if reads and self.project is not None:
            self.project.reads.replay(reads)

    def _at_call(self, call: ast.Call, scope: Scope, module: ModuleInfo,
                 known: dict[int, object] | None = None) -> Summary | None:
        func = call.func
        kernel_launch = isinstance(func, ast.Subscript)
        target = func.value if kernel_launch else func  # type: ignore[union-attr]
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        if not kernel_launch:
            qualified = scope.resolve(target)
            if qualified is not None and qualified.startswith("torch.ops."):
                return self._custom_op_call(target, qualified, module)
        found = self.callee(target, scope, module)
        if found is None:
            return None
        node, owner = found
        kernel = is_kernel(node)
        if kernel != kernel_launch:
            return None  # `kernel(x)` outside a launch, or `f[grid]` of a plain def
        binding = call_binding(call, node, known)
        effect = self._summary(node, owner, None if kernel else self._deciding(node, binding))
        writes = self._launch_writes(node, binding) if kernel else effect.writes
        writes = tuple(w for w in writes if not ruled_out(w.when, binding))
        if not writes and not effect.result.whole and not effect.result.elements and \
                not effect.leaves:
            return None
        return Summary(ast.unparse(target), kernel, writes, effect.result,
                       tuple(parameters_of(node)), effect.leaves)

    def callee(self, target: ast.Name | ast.Attribute, scope: Scope,
               module: ModuleInfo) -> tuple[FunctionNode, ModuleInfo] | None:
        """The def a called (or passed) name denotes, across the project."""
        qualified = None
        if isinstance(target, ast.Name):
            found, bound = scope.lookup(target.id)
            if not found and module.partial and self.project is not None and \
                    _may_bind(module.source, target.id):
                # The sparse parse left out the def (or assignment) of the name.
                found, qualified = self.project.complete(module).scope.lookup(target.id)
                bound = qualified
            if found and bound is None:  # a def of this module (or a local)
                return _def_in(module, target.id, self.project)
        qualified = qualified or scope.resolve(target)
        if qualified is None or self.project is None or \
                qualified.partition(".")[0] in _LIBRARIES:
            return None  # torch's own API has its tables (torch_api.py), not summaries
        resolved = self.project.resolve(qualified, module, load=True)
        if resolved is None or resolved.module is None:
            return None
        owner = resolved.module
        if resolved.cls is not None:  # `MyFn._helper`: a method of a scanned class
            if len(resolved.attrs) != 1:
                return None
            prefix = resolved.cls.key.removeprefix(f"{owner.module_name}.")
            return _def_in(owner, f"{prefix}.{resolved.attrs[0]}", self.project)
        name = resolved.name
        if owner.module_name and name.startswith(owner.module_name + "."):
            return _def_in(owner, name[len(owner.module_name) + 1:], self.project)
        return None

    def _custom_op_call(self, target: ast.expr, qualified: str,
                        module: ModuleInfo) -> Summary | None:
        """`torch.ops.ns.name(...)` of an op this module declares: the
        arguments its `mutates_args` (or schema `Tensor(a!)`) name are written."""
        key = id(module)
        if key not in self._ops:
            self._ops[key] = declared_ops(module, self.project)
        parts = qualified.split(".")
        if len(parts) < 4:
            return None
        op = self._ops[key].get(f"{parts[2]}::{parts[3]}") or self._ops[key].get(f"::{parts[3]}")
        if op is None or op.node is None or op.module is None or not op.mutated:
            return None  # a schema without its body in sight: nothing known is written
        # What the body writes (declaring more is legal), of what it declares.
        writes = tuple(w for w in self._summary(op.node, op.module).writes
                       if w.name in op.mutated)
        if not writes:
            return None
        return Summary(ast.unparse(target), False, writes, Result(), op.parameters)

    def _launch_writes(self, kernel: FunctionNode, binding: Binding) -> tuple[Write, ...]:
        """A kernel's writes specialized to one launch's literal arguments
        (`A_TO_B=True` picks the branch of `dst = b_ptr if A_TO_B else a_ptr`)."""
        try:
            key = (id(kernel), tuple(sorted(binding.items())))
            hash(key)
        except TypeError:  # an unhashable literal: no memo, same answer
            return kernel_writes(kernel, binding)
        if key not in self._launches:
            self._launches[key] = kernel_writes(kernel, binding)
        return self._launches[key]

    # -- summaries -------------------------------------------------------------
    def _deciding(self, node: FunctionNode, binding: Binding) -> dict[str, object] | None:
        """The literal arguments of a call that decide the helper's branches
        (`inplace=False` where it tests `if inplace:`): the summary is then
        the helper's, run with them, so that an alias made only on a branch
        the call rules out (`out = x if inplace else ...`) writes nothing."""
        key = id(node)
        if key not in self._tested:
            self._tested[key] = _tested_names(node)
        deciding = {name: value for name, value in binding.items()
                    if name in self._tested[key] and is_hashable(value)}
        return deciding or None

    def _summary(self, node: FunctionNode, module: ModuleInfo,
                 decided: dict[str, object] | None = None) -> Effect:
        key: object = (id(node), tuple(sorted(decided.items()))) if decided else id(node)
        if key in self._done:
            effect, reads = self._done[key]
            self._replay(reads)
            return effect
        if id(node) in self._running:
            return Effect()  # recursion: the outer computation sees the rest
        self._running.add(id(node))
        try:
            self._done[key] = self._remembered(self._effect, node, module, decided)
        finally:
            self._running.discard(id(node))
        return self._done[key][0]

    def _effect(self, node: FunctionNode, module: ModuleInfo,
                decided: dict[str, object] | None = None) -> Effect:
        if self.project is not None:
            self.project.read(module)  # the helper's own file
        return Effect(kernel_writes(node)) if is_kernel(node) else \
            self._python_effect(node, module, decided)

    def _python_effect(self, node: FunctionNode, module: ModuleInfo,
                       decided: dict[str, object] | None = None) -> Effect:
        parameters = parameters_of(node)
        # Each parameter is a root (for writes and aliases) and a taint (for
        # what the result is computed from) of its own.
        initial = {name: Value(roots=frozenset({f"param:{name}"}),
                               taint=frozenset({f"param:{name}"})) for name, _ in parameters}
        inner = module.scopes.get(id(node))
        scope = inner.parent if inner is not None and inner.parent is not None else module.scope
        facts = Interpreter(module, scope, node, initial, effects=self, decided=decided).run()
        guards = statement_guards(node, {name for name, _ in parameters})
        certain: dict[str, bool] = {}
        collective: dict[str, bool] = {}
        paths: dict[str, set[Path]] = {}
        for mutation in facts.of(Mutation):
            path = guards.get(id(mutation.node), ())
            for name in param_names(mutation.value.roots):
                certain[name] = certain.get(name, False) or mutation.certain_tensor
                collective[name] = collective.get(name, True) and mutation.collective
                paths.setdefault(name, set()).add(path)
        writes = tuple(Write(position, name, certain[name], _alternatives(paths[name]),
                             collective[name])
                       for name, position in parameters if name in certain)
        return Effect(writes, _result(facts.returns), _leaves(node, facts, parameters))


def _leaves(node: FunctionNode, facts: MethodFacts,
            parameters: list[tuple[str, int | None]]) -> tuple[Leave, ...]:
    """Parameters whose values leave autograd on the way to a returned value.
    Not under a mode switch of the helper (`if quant_type == "truncated":`):
    whether the caller's mode takes that branch is not known here."""
    switched = _mode_switched(node, {name for name, _ in parameters})
    found: set[Leave] = set()
    for event in facts.of(LeftAutograd):
        if id(event.node) in switched:
            continue
        for ret in facts.returns:
            if event.key not in ret.value.taint:
                continue
            names = event.params if event.params is not None else \
                param_names(ret.value.taint)
            found.update(Leave(name, event.how, event.on_gradient) for name in names)
    order = {name: i for i, (name, _) in enumerate(parameters)}
    return tuple(sorted(found, key=lambda leave: (order.get(leave.name, 0), leave.how)))


def _result(returns: list[Return]) -> Result:
    """Which parameters the returned value may alias (see `Result`)."""
    def params(value: Value) -> frozenset[str]:
        if value.seq:
            return frozenset()  # a list or tuple holding the arguments is not one of them
        return param_names(value.roots)

    whole = frozenset().union(*(params(r.value) for r in returns)) if returns else frozenset()
    lengths = {len(r.value.elems) if r.value.elems is not None and not r.value.is_list else -1
               for r in returns}
    elements = None
    if returns and len(lengths) == 1 and -1 not in lengths:
        count = lengths.pop()
        elements = tuple(frozenset().union(*(params(r.value.elems[i]) for r in returns))
                         for i in range(count))
        if not any(elements):
            elements = None
    aliasing = [v for r in returns for v in (r.value.elems or (r.value,)) if params(v)]
    return Result(whole, elements, bool(aliasing) and all(v.detached for v in aliasing))


def effects_of(project: Project) -> Effects:
    """The summaries of a project's functions: one `Effects` per project,
    kept with its project-wide results and shared by all its Functions."""
    effects = project.cache.get("effects")
    if not isinstance(effects, Effects):
        effects = project.cache["effects"] = Effects(project)
    return effects


def _mode_switched(node: FunctionNode, parameters: set[str]) -> set[int]:
    """Nodes (by id) under an `if` that tests a parameter as a mode: `if flag:`,
    `if not flag:`, `if mode == "x":`, `elif mode in ("a", "b"):`."""
    def is_mode_test(test: ast.expr) -> bool:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        if isinstance(test, ast.Name):
            return test.id in parameters
        if isinstance(test, ast.BoolOp):
            return any(is_mode_test(value) for value in test.values)
        return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and \
            test.left.id in parameters and \
            all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in test.ops) and \
            all(isinstance(c, (ast.Constant, ast.Tuple, ast.List, ast.Set))
                for c in test.comparators)

    return {id(inner) for statement in ast.walk(node)
            if isinstance(statement, ast.If) and is_mode_test(statement.test)
            for inner in _under(statement.body + statement.orelse)}


def _under(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of these statements."""
    for statement in statements:
        yield from ast.walk(statement)


def _tested_names(node: FunctionNode) -> frozenset[str]:
    """Names a branch test of the def reads (`if inplace:`, `x if mode else y`)."""
    return frozenset(n.id for inner in ast.walk(node)
                     if isinstance(inner, (ast.If, ast.IfExp, ast.While))
                     for n in ast.walk(inner.test) if isinstance(n, ast.Name))


def _alternatives(paths: set[Path]) -> tuple[Path, ...]:
    """A write's paths, in a stable order; one unguarded path makes it unconditional."""
    if () in paths:
        return UNCONDITIONAL
    return tuple(sorted(paths, key=lambda path: [(ast.unparse(g.test), g.holds) for g in path]))


def _may_bind(source: str, name: str) -> bool:
    """Whether the text may define `name` (a def, or an assignment at the
    start of a line): only then is a whole parse worth looking for it."""
    return f"def {name}(" in source or f"\n{name} =" in source or f"\n{name}: " in source


def _def_in(module: ModuleInfo, qualname: str,
            project: Project | None) -> tuple[FunctionNode, ModuleInfo] | None:
    node = module.defs.get(qualname)
    if node is None and module.partial and project is not None:
        module = project.complete(module)  # the sparse parse may have left the def out
        node = module.defs.get(qualname)
    return (node, module) if node is not None else None
