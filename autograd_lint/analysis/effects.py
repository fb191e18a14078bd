"""Effect summaries: which parameters a helper changes in place.

A Function's forward or backward often writes through a helper: a wrapper
that launches a Triton kernel storing into `q` and `k`, a function that
calls `dist.all_reduce(grad)` or `grad.mul_()`. For every function the
interpreter calls (a def of the module, a staticmethod of a class, an
imported helper of a scanned module) a summary is computed once per project
and applied at each call site as in-place changes of the arguments passed
there, so the in-place rules (AGF005/006/007) see through it.

- A Python function: the interpreter runs over its body with each parameter
  as a root of its own; its in-place events on those roots (directly, on
  views and aliases, through in-place collectives, through callees' own
  summaries) are the summary. A call to a function whose summary is being
  computed (recursion) contributes nothing.
- A `@triton.jit` kernel (also under `triton.autotune` / `heuristics`): a
  pointer parameter is written when an address built from it (arithmetic,
  `tl.make_block_ptr(base=...)`, `tl.advance`, not values `tl.load` read)
  reaches `tl.store` or a `tl.atomic_*`. A launch `kernel[grid](a, b)` then
  writes the tensors bound to those parameters.

Unknown callees stay opaque: no summary, no finding.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import FunctionNode, ModuleInfo, Scope
from .guards import (
    UNCONDITIONAL,
    Binding,
    Path,
    call_binding,
    evaluate,
    ruled_out,
    statement_guards,
)

if TYPE_CHECKING:
    from ..project import Project
    from .interpreter import MethodFacts, Return
    from .values import Value

_TRITON_STORES = frozenset({"store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                            "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas"})
# Calls whose result is still an address built from their first argument.
_POINTER_CALLS = frozenset({"make_block_ptr", "advance", "multiple_of", "max_contiguous",
                            "max_constancy", "to", "broadcast_to", "reshape", "expand_dims"})
_KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
# Libraries whose functions are never summarized: torch's in-place API is
# known by name, and following `torch.*` into a torch checkout costs parses.
_LIBRARIES = frozenset({"torch", "triton", "numpy", "math", "functools", "operator",
                        "builtins", "typing", "os", "sys", "warnings", "collections"})


@dataclass(frozen=True)
class Write:
    """A parameter the callee changes in place."""

    position: int | None  # None: keyword-only
    name: str
    certain: bool  # the change only exists on tensors (`.add_()`, a kernel store)
    # The paths (tests of the callee's parameters) on which the change happens:
    # a call whose literal arguments refute all of them (`inplace=False`,
    # `mode="copy"`) does not write.
    when: tuple[Path, ...] = UNCONDITIONAL


@dataclass(frozen=True)
class Result:
    """The parameters a function's result may be (or be a view of)."""

    whole: frozenset[str] = frozenset()
    # Per position, when every return is a tuple display of one length.
    elements: tuple[frozenset[str], ...] | None = None
    detached: bool = False  # every aliasing value returned is a `.detach()` of it


@dataclass(frozen=True)
class Leave:
    """A parameter whose value leaves autograd on the way to the result
    (`.item()`, `.numpy()`, `np.*`, a no_grad block; `.detach()` / `.data`
    when `on_gradient`: those matter only for the incoming gradient itself)."""

    name: str
    how: str
    on_gradient: bool = False


@dataclass(frozen=True)
class Effect:
    writes: tuple[Write, ...] = ()
    result: Result = Result()
    leaves: tuple[Leave, ...] = ()


@dataclass(frozen=True)
class Summary:
    callee: str  # as written at the call site, for messages
    kernel: bool
    writes: tuple[Write, ...]
    result: Result = Result()
    parameters: tuple[tuple[str, int | None], ...] = ()  # (name, position): binding args
    leaves: tuple[Leave, ...] = ()


def param_names(markers: frozenset[str]) -> frozenset[str]:
    """The parameters named by `param:` roots or taint markers (a summary run
    gives each parameter both)."""
    return frozenset(m[6:] for m in markers if m.startswith("param:"))


class Effects:
    """The summaries of one project's functions, computed on demand, once."""

    def __init__(self, project: Project | None) -> None:
        self.project = project
        # Memoised with the files each was computed from (see DependencyLog).
        self._done: dict[int, tuple[Effect, frozenset[str]]] = {}
        self._calls: dict[tuple[int, int], tuple[Summary | None, frozenset[str]]] = {}
        self._running: set[int] = set()
        self._ops: dict[int, dict[str, CustomOp]] = {}
        self._launches: dict[tuple[int, tuple[tuple[str, object], ...]], tuple[Write, ...]] = {}

    # -- call sites ------------------------------------------------------------
    def at_call(self, call: ast.Call, scope: Scope, module: ModuleInfo) -> Summary | None:
        """The summary for a call (`helper(q, k)`, `kernel[grid](x, out)`), or None."""
        # A call is met again in loop passes and in each interpretation of its method.
        key = (id(call), id(module))
        if key not in self._calls:
            self._calls[key] = self._remembered(self._at_call, call, scope, module)
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

    def _at_call(self, call: ast.Call, scope: Scope, module: ModuleInfo) -> Summary | None:
        func = call.func
        kernel_launch = isinstance(func, ast.Subscript)
        target = func.value if kernel_launch else func  # type: ignore[union-attr]
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return None
        if not kernel_launch:
            qualified = scope.resolve(target)
            if qualified is not None and qualified.startswith("torch.ops."):
                return self._custom_op_call(target, qualified, module)
        found = self._callee(target, scope, module)
        if found is None:
            return None
        node, owner = found
        kernel = _is_kernel(node)
        if kernel != kernel_launch:
            return None  # `kernel(x)` outside a launch, or `f[grid]` of a plain def
        effect = self._summary(node, owner)
        binding = call_binding(call, node)
        writes = self._launch_writes(node, binding) if kernel else effect.writes
        writes = tuple(w for w in writes if not ruled_out(w.when, binding))
        if not writes and not effect.result.whole and not effect.result.elements and \
                not effect.leaves:
            return None
        return Summary(ast.unparse(target), kernel, writes, effect.result,
                       tuple(_parameters(node)), effect.leaves)

    def _callee(self, target: ast.Name | ast.Attribute, scope: Scope,
                module: ModuleInfo) -> tuple[FunctionNode, ModuleInfo] | None:
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
            self._ops[key] = _custom_ops(module, self.project)
        parts = qualified.split(".")
        if len(parts) < 4:
            return None
        op = self._ops[key].get(f"{parts[2]}::{parts[3]}") or self._ops[key].get(f"::{parts[3]}")
        if op is None or not op.mutated:
            return None
        writes = tuple(Write(position, name, True) for name, position in op.parameters
                       if name in op.mutated)
        return Summary(ast.unparse(target), False, writes, Result(), op.parameters)

    def _launch_writes(self, kernel: FunctionNode, binding: Binding) -> tuple[Write, ...]:
        """A kernel's writes specialized to one launch's literal arguments
        (`A_TO_B=True` picks the branch of `dst = b_ptr if A_TO_B else a_ptr`)."""
        try:
            key = (id(kernel), tuple(sorted(binding.items())))
            hash(key)
        except TypeError:  # an unhashable literal: no memo, same answer
            return _kernel_writes(kernel, binding)
        if key not in self._launches:
            self._launches[key] = _kernel_writes(kernel, binding)
        return self._launches[key]

    # -- summaries -------------------------------------------------------------
    def _summary(self, node: FunctionNode, module: ModuleInfo) -> Effect:
        key = id(node)
        if key in self._done:
            effect, reads = self._done[key]
            self._replay(reads)
            return effect
        if key in self._running:
            return Effect()  # recursion: the outer computation sees the rest
        self._running.add(key)
        try:
            self._done[key] = self._remembered(self._effect, node, module)
        finally:
            self._running.discard(key)
        return self._done[key][0]

    def _effect(self, node: FunctionNode, module: ModuleInfo) -> Effect:
        if self.project is not None:
            self.project.read(module)  # the helper's own file
        return Effect(_kernel_writes(node)) if _is_kernel(node) else \
            self._python_effect(node, module)

    def _python_effect(self, node: FunctionNode, module: ModuleInfo) -> Effect:
        from .interpreter import Interpreter, Mutation
        from .values import Value

        parameters = _parameters(node)
        # Each parameter is a root (for writes and aliases) and a taint (for
        # what the result is computed from) of its own.
        initial = {name: Value(roots=frozenset({f"param:{name}"}),
                               taint=frozenset({f"param:{name}"})) for name, _ in parameters}
        inner = module.scopes.get(id(node))
        scope = inner.parent if inner is not None and inner.parent is not None else module.scope
        facts = Interpreter(module, scope, node, initial, effects=self).run()
        guards = statement_guards(node, {name for name, _ in parameters})
        certain: dict[str, bool] = {}
        paths: dict[str, set[Path]] = {}
        for mutation in facts.of(Mutation):
            path = guards.get(id(mutation.node), ())
            for name in param_names(mutation.value.roots):
                certain[name] = certain.get(name, False) or mutation.certain_tensor
                paths.setdefault(name, set()).add(path)
        for name in _declared_mutations(node):  # a custom op's `mutates_args`
            certain[name] = True
            paths[name] = {()}
        writes = tuple(Write(position, name, certain[name], _alternatives(paths[name]))
                       for name, position in parameters if name in certain)
        return Effect(writes, _result(facts.returns), _leaves(node, facts, parameters))


def _leaves(node: FunctionNode, facts: MethodFacts,
            parameters: list[tuple[str, int | None]]) -> tuple[Leave, ...]:
    """Parameters whose values leave autograd on the way to a returned value.
    Not under a mode switch of the helper (`if quant_type == "truncated":`):
    whether the caller's mode takes that branch is not known here."""
    from .interpreter import LeftAutograd

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
        if value.seq and value.elems is None:
            return frozenset()  # a list built from the arguments: not them
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


# ---------------------------------------------------------------------------
# Custom ops (torch.library): what they declare they mutate
# ---------------------------------------------------------------------------
_CUSTOM_OP_DECORATORS = frozenset({"custom_op", "triton_op"})


@dataclass(frozen=True)
class CustomOp:
    parameters: tuple[tuple[str, int | None], ...]
    mutated: frozenset[str]


def _custom_op_decorator(node: FunctionNode) -> ast.Call | None:
    """`@torch.library.custom_op("ns::op", mutates_args=...)` (or `triton_op`)."""
    return next((d for d in node.decorator_list if isinstance(d, ast.Call)
                 and _last_name(d.func) in _CUSTOM_OP_DECORATORS), None)


def _declared_mutations(node: FunctionNode) -> frozenset[str]:
    """`@torch.library.custom_op("ns::op", mutates_args=("x",))`: {"x"}."""
    decorator = _custom_op_decorator(node)
    for keyword in decorator.keywords if decorator is not None else ():
        if keyword.arg == "mutates_args" and \
                isinstance(keyword.value, (ast.Tuple, ast.List, ast.Set)):
            return frozenset(e.value for e in keyword.value.elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return frozenset()


def _last_name(expr: ast.expr) -> str:
    """`torch.library.custom_op` -> "custom_op"; "" for other expressions."""
    return expr.attr if isinstance(expr, ast.Attribute) else \
        expr.id if isinstance(expr, ast.Name) else ""


def _custom_ops(module: ModuleInfo, project: Project | None) -> dict[str, CustomOp]:
    """The ops a module declares, by "ns::name" ("::name" when a `lib.define`
    leaves the namespace to its Library): decorated defs and schema strings."""
    if "mutates_args" not in module.source and "!)" not in module.source:
        return {}
    if module.partial and project is not None:
        module = project.complete(module)
    ops: dict[str, CustomOp] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorator = _custom_op_decorator(node)
            first = decorator.args[0] if decorator is not None and decorator.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    "::" in first.value:
                ops[first.value] = CustomOp(tuple(_parameters(node)), _declared_mutations(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "define":
            strings = [a.value for a in node.args
                       if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(strings) == 2:  # torch.library.define("ns::name", "(Tensor(a!) x) -> ()")
                declared = _schema(strings[0] + strings[1])
            elif len(strings) == 1:  # lib.define("name(Tensor(a!) x) -> ()")
                declared = _schema(strings[0])
            else:
                continue
            if declared is not None:
                name, op = declared
                ops[name if "::" in name else f"::{name}"] = op
    return ops


def _schema(text: str) -> tuple[str, CustomOp] | None:
    """"ns::name(Tensor(a!) x, Tensor y, *, int n=1) -> ()": the op's name,
    its parameters and those annotated as written (`!`)."""
    name, paren, rest = text.partition("(")
    if not paren or "->" not in rest:
        return None
    name = name.strip().split(".")[0]  # an overload name ("name.out") is not part of the op
    arguments = rest.rsplit("->", 1)[0].strip().removesuffix(")")
    parameters: list[tuple[str, int | None]] = []
    mutated: set[str] = set()
    depth, current, pieces = 0, "", []
    for char in arguments:
        depth += char in "([" and 1 or 0
        depth -= char in ")]" and 1 or 0
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    keyword_only = False
    for piece in (p.strip() for p in pieces):
        if piece == "*":
            keyword_only = True
            continue
        words = piece.split("=")[0].split()
        if len(words) < 2:
            continue
        parameters.append((words[-1], None if keyword_only else len(parameters)))
        if "!" in " ".join(words[:-1]):
            mutated.add(words[-1])
    return name, CustomOp(tuple(parameters), frozenset(mutated))


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


def _parameters(node: FunctionNode) -> list[tuple[str, int | None]]:
    """(name, position) of each parameter apply-style calls can bind."""
    positional = [*node.args.posonlyargs, *node.args.args]
    found: list[tuple[str, int | None]] = [(a.arg, i) for i, a in enumerate(positional)]
    found += [(a.arg, None) for a in node.args.kwonlyargs]
    return found


def _is_kernel(node: FunctionNode) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = _last_name(target)
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if name in _KERNEL_DECORATORS and isinstance(root, ast.Name) and \
                root.id in ("triton", "jit", "autotune", "heuristics"):
            return True
    return False


def _kernel_writes(node: FunctionNode, binding: Binding | None = None) -> tuple[Write, ...]:
    """Pointer parameters whose addresses reach a store or an atomic, under a
    launch's literal arguments (`binding`) where they decide a branch."""
    binding = binding or {}
    parameters = _parameters(node)
    names = {name for name, _ in parameters}
    derived: dict[str, set[str]] = {name: {name} for name in names}
    assignments = [n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign))]
    for _ in range(len(assignments) + 1):  # to a fixed point: chains of rebindings
        grew = False
        for assignment in assignments:
            sources = _address_sources(assignment.value, derived, binding)
            targets = assignment.targets if isinstance(assignment, ast.Assign) \
                else [assignment.target]
            for target in targets:
                for name_node in ast.walk(target):
                    if isinstance(name_node, ast.Name):
                        known = derived.setdefault(name_node.id, set())
                        if isinstance(assignment, ast.AugAssign) and known:
                            sources = known  # `ptr += offset` moves the same pointer
                        if not sources <= known:
                            known |= sources
                            grew = True
        if not grew:
            break
    constants = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                 if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    written = _stored(node.body, derived, constants, binding)
    return tuple(Write(position, name, True) for name, position in parameters
                 if name in written and name not in constants)


def _stored(body: list[ast.stmt], derived: dict[str, set[str]],
            constants: set[str], binding: Binding) -> set[str]:
    """Parameters stored into by these statements on every specialization the
    launch allows: an `if` its literal arguments decide runs one branch; a
    store under an undecided `if FLAG:` (a constexpr parameter) counts only
    when the else branch stores there too (`PRECOMPUTED_LSE` kernels load
    instead)."""
    written: set[str] = set()
    for statement in body:
        decided = evaluate(statement.test, binding) if isinstance(statement, ast.If) else None
        if decided is not None:
            branch = statement.body if decided else statement.orelse  # type: ignore[attr-defined]
            written |= _stored(branch, derived, constants, binding)
            continue
        if isinstance(statement, ast.If) and any(
                isinstance(n, ast.Name) and n.id in constants for n in ast.walk(statement.test)):
            written |= _stored(statement.body, derived, constants, binding) & \
                _stored(statement.orelse, derived, constants, binding)
            continue
        nested = [child for field in ("body", "orelse", "finalbody")
                  for child in [getattr(statement, field, None)] if isinstance(child, list)]
        for block in nested:
            written |= _stored(block, derived, constants, binding)
        for handler in getattr(statement, "handlers", ()):
            written |= _stored(handler.body, derived, constants, binding)
        own = [statement] if not nested else \
            [getattr(statement, f) for f in ("test", "iter", "items") if hasattr(statement, f)]
        for part in own:
            for call in ast.walk(part) if isinstance(part, ast.AST) else ():
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                        call.func.attr in _TRITON_STORES and call.args:
                    written |= _address_sources(call.args[0], derived, binding)
    return written


def _address_sources(expr: ast.expr, derived: dict[str, set[str]],
                     binding: Binding) -> set[str]:
    """The parameters an address expression is built from: names and
    arithmetic, through pointer-preserving calls; not through loads. A
    conditional expression the launch's literal arguments decide is the
    branch they choose."""
    if isinstance(expr, ast.Name):
        return set(derived.get(expr.id, ()))
    if isinstance(expr, ast.BinOp):
        if not isinstance(expr.op, (ast.Add, ast.Sub)):
            return set()  # `row * stride`: an offset, never an address
        # `ptr + offsets`: the address is the left operand's; the right one
        # counts only when the left is a pure offset (`row * stride + ptr`).
        # (`Q + (cols * 2 + head_dim)` does not store into `head_dim`.)
        return _address_sources(expr.left, derived, binding) or \
            _address_sources(expr.right, derived, binding)
    if isinstance(expr, ast.Subscript):  # `ptr[None, :]`: still the address
        return _address_sources(expr.value, derived, binding)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in _POINTER_CALLS:
        if expr.func.attr == "to":  # `ptr.to(tl.pointer_type(...))`
            return _address_sources(expr.func.value, derived, binding)
        base = next((k.value for k in expr.keywords if k.arg == "base"),
                    expr.args[0] if expr.args else None)
        return _address_sources(base, derived, binding) if base is not None else set()
    if isinstance(expr, ast.IfExp):
        decided = evaluate(expr.test, binding)
        if decided is not None:
            return _address_sources(expr.body if decided else expr.orelse, derived, binding)
        return _address_sources(expr.body, derived, binding) | \
            _address_sources(expr.orelse, derived, binding)
    return set()
