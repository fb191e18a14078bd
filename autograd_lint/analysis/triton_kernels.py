"""Triton kernels and their launches: the pointer parameters a kernel stores into.

A `@triton.jit` kernel (also under `triton.autotune` / `heuristics`): a
pointer parameter is written when an address built from it (arithmetic,
`tl.make_block_ptr(base=...)`, `tl.advance`, not values `tl.load` read)
reaches `tl.store` or a `tl.atomic_*`. A launch `kernel[grid](a, b)` then
writes the tensors bound to those parameters; the launch's literal arguments
decide the branches that test them (`dst = b_ptr if A_TO_B else a_ptr`).

How a kernel indexes a pointer (`pointer_indexing`, for AGF216): whether a
load or store reaches it at an offset (`ptr + offs`, a block pointer), and
which parameters those addresses are computed from (a `stride_row` among
them: the launch decides the layout; none: the kernel assumes one).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.model import FunctionNode
from .guards import Binding, evaluate
from .summaries import Write
from .syntax import last_name, parameters_of

_TRITON_STORES = frozenset({"store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                            "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas"})
# Calls whose result is still an address built from their first argument.
_POINTER_CALLS = frozenset({"make_block_ptr", "advance", "multiple_of", "max_contiguous",
                            "max_constancy", "to", "broadcast_to", "reshape", "expand_dims"})
_ACCESSES = _TRITON_STORES | {"load"}
_KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


def is_kernel(node: FunctionNode) -> bool:
    """`@triton.jit` (also `triton.autotune` / `heuristics`, or those names imported)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = last_name(target)
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if name in _KERNEL_DECORATORS and isinstance(root, ast.Name) and \
                root.id in ("triton", "jit", "autotune", "heuristics"):
            return True
    return False


def kernel_writes(node: FunctionNode, binding: Binding | None = None) -> tuple[Write, ...]:
    """Pointer parameters whose addresses reach a store or an atomic, under a
    launch's literal arguments (`binding`) where they decide a branch."""
    binding = binding or {}
    derived = _derived(node, binding)
    constants = _constants(node)

    def stored(call: ast.Call) -> set[str]:
        address = _address_argument(call) if _called(call) in _TRITON_STORES else None
        return _address_sources(address, derived, binding) if address is not None else set()

    written = _reached(node.body, constants, binding, stored)
    return tuple(Write(position, name, True) for name, position in parameters_of(node)
                 if name in written and name not in constants)


@dataclass(frozen=True)
class PointerIndexing:
    """How a kernel addresses its pointer parameters."""

    # Pointers a load or store reaches at an offset (`ptr + offs`, a block
    # pointer), on every specialization the launch's literal arguments allow:
    # a kernel that only reads `tl.load(ptr)` reads one element, whatever the layout.
    indexed: frozenset[str]
    # Per pointer: the parameters its addresses are computed from (offsets,
    # strides, shapes), through the kernel's assignments.
    depends: Mapping[str, frozenset[str]]


def pointer_indexing(node: FunctionNode, binding: Binding | None = None) -> PointerIndexing:
    """How the kernel indexes each pointer parameter, under a launch's literal
    arguments (`binding`) where they decide a branch."""
    binding = binding or {}
    derived = _derived(node, binding)
    moved = _moved(node, derived, binding)
    constants = _constants(node)

    def indexed(call: ast.Call) -> set[str]:
        address = _address_argument(call) if _called(call) in _ACCESSES else None
        return _moved_sources(address, derived, moved, binding) if address is not None \
            else set()

    reached = _reached(node.body, constants, binding, indexed)
    names = {name for name, _ in parameters_of(node)} - constants
    return PointerIndexing(frozenset(reached & names),
                           _address_dependencies(node, derived, binding, names))


def _derived(node: FunctionNode, binding: Binding) -> dict[str, set[str]]:
    """Each name's pointer parameters: the addresses it may hold, to a fixed
    point over the kernel's (re)bindings."""
    names = {name for name, _ in parameters_of(node)}
    derived: dict[str, set[str]] = {name: {name} for name in names}
    assignments = _assignments(node)
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
    return derived


def _assignments(node: FunctionNode) -> list[ast.Assign | ast.AugAssign]:
    return [n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign))]


def _constants(node: FunctionNode) -> set[str]:
    """The `tl.constexpr` parameters: values, never pointers."""
    return {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}


def _called(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _address_argument(call: ast.Call) -> ast.expr | None:
    """The address a `tl.load` / `tl.store` / `tl.atomic_*` reaches."""
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "pointer"), None)


def _reached(body: list[ast.stmt], constants: set[str], binding: Binding,
             sources: Callable[[ast.Call], set[str]]) -> set[str]:
    """Parameters these statements' calls reach (`sources`: those one call
    reaches; a store's targets, an offset load's pointers) on every
    specialization the launch allows: an `if` its literal arguments decide
    runs one branch; a call under an undecided `if FLAG:` (a constexpr
    parameter) counts only when the else branch reaches there too
    (`PRECOMPUTED_LSE` kernels load instead of storing)."""
    written: set[str] = set()
    for statement in body:
        decided = evaluate(statement.test, binding) if isinstance(statement, ast.If) else None
        if decided is not None:
            branch = statement.body if decided else statement.orelse  # type: ignore[attr-defined]
            written |= _reached(branch, constants, binding, sources)
            continue
        if isinstance(statement, ast.If) and any(
                isinstance(n, ast.Name) and n.id in constants for n in ast.walk(statement.test)):
            written |= _reached(statement.body, constants, binding, sources) & \
                _reached(statement.orelse, constants, binding, sources)
            continue
        nested = [child for field in ("body", "orelse", "finalbody")
                  for child in [getattr(statement, field, None)] if isinstance(child, list)]
        for block in nested:
            written |= _reached(block, constants, binding, sources)
        for handler in getattr(statement, "handlers", ()):
            written |= _reached(handler.body, constants, binding, sources)
        own = [statement] if not nested else \
            [getattr(statement, f) for f in ("test", "iter", "items") if hasattr(statement, f)]
        for part in own:
            for call in ast.walk(part) if isinstance(part, ast.AST) else ():
                if isinstance(call, ast.Call):
                    written |= sources(call)
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


def _moved(node: FunctionNode, derived: dict[str, set[str]],
           binding: Binding) -> dict[str, set[str]]:
    """Each name's pointer parameters that it holds moved by an offset
    (`p = x_ptr + offs`, `x_ptr += row * stride`, a block pointer), to a
    fixed point; a plain copy (`p = x_ptr`) is not moved."""
    moved: dict[str, set[str]] = {}
    assignments = _assignments(node)
    for _ in range(len(assignments) + 1):
        grew = False
        for assignment in assignments:
            if isinstance(assignment, ast.AugAssign):
                target = assignment.target
                sources = set(derived.get(target.id, ())) if isinstance(target, ast.Name) and \
                    isinstance(assignment.op, (ast.Add, ast.Sub)) else set()
                targets = [target]
            else:
                sources = _moved_sources(assignment.value, derived, moved, binding)
                targets = assignment.targets
            for target in targets:
                if isinstance(target, ast.Name) and \
                        not sources <= moved.setdefault(target.id, set()):
                    moved[target.id] |= sources
                    grew = True
        if not grew:
            break
    return moved


def _moved_sources(expr: ast.expr, derived: dict[str, set[str]],
                   moved: dict[str, set[str]], binding: Binding) -> set[str]:
    """The pointer parameters an address expression reaches at an offset."""
    if isinstance(expr, ast.Name):
        return set(moved.get(expr.id, ()))
    if isinstance(expr, ast.BinOp):  # `ptr + offs`: an address moved by an offset
        return _address_sources(expr, derived, binding)
    if isinstance(expr, ast.Subscript):
        return _moved_sources(expr.value, derived, moved, binding)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in _POINTER_CALLS:
        if expr.func.attr in ("make_block_ptr", "advance"):  # a block: shape and strides
            return _address_sources(expr, derived, binding)
        if expr.func.attr == "to":
            return _moved_sources(expr.func.value, derived, moved, binding)
        return _moved_sources(expr.args[0], derived, moved, binding) if expr.args else set()
    if isinstance(expr, ast.IfExp):
        decided = evaluate(expr.test, binding)
        if decided is not None:
            return _moved_sources(expr.body if decided else expr.orelse, derived, moved, binding)
        return _moved_sources(expr.body, derived, moved, binding) & \
            _moved_sources(expr.orelse, derived, moved, binding)
    return set()


def _address_dependencies(node: FunctionNode, derived: dict[str, set[str]], binding: Binding,
                          parameters: set[str]) -> dict[str, frozenset[str]]:
    """Per pointer parameter, the parameters any address of it is computed
    from: every name of the address expressions of its loads and stores,
    closed over the kernel's assignments (an over-approximation: a stride
    anywhere on the way counts)."""
    inputs = _name_inputs(node)
    depends: dict[str, set[str]] = {}
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or _called(call) not in _ACCESSES:
            continue
        address = _address_argument(call)
        if address is None:
            continue
        pointers = _address_sources(address, derived, binding) & parameters
        if not pointers:
            continue
        reached = _closure({n.id for n in ast.walk(address) if isinstance(n, ast.Name)}, inputs)
        for pointer in pointers:
            depends.setdefault(pointer, set()).update(reached)
    all_parameters = {name for name, _ in parameters_of(node)}
    return {pointer: frozenset(names & all_parameters) for pointer, names in depends.items()}


def _name_inputs(node: FunctionNode) -> dict[str, set[str]]:
    """The names each name's bindings are computed from (`for i in range(n)`:
    i from n; `p += off`: p from p and off)."""
    inputs: dict[str, set[str]] = {}
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            value, targets = inner.value, \
                inner.targets if isinstance(inner, ast.Assign) else [inner.target]
        elif isinstance(inner, (ast.For, ast.AsyncFor)):
            value, targets = inner.iter, [inner.target]
        else:
            continue
        if value is None:
            continue
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if isinstance(inner, ast.AugAssign):
            names |= {n.id for n in ast.walk(inner.target) if isinstance(n, ast.Name)}
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    inputs.setdefault(name.id, set()).update(names)
    return inputs


def _closure(names: set[str], inputs: dict[str, set[str]]) -> set[str]:
    reached = set(names)
    pending = list(names)
    while pending:
        for name in inputs.get(pending.pop(), ()):
            if name not in reached:
                reached.add(name)
                pending.append(name)
    return reached
