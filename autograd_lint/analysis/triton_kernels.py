"""Triton kernels and their launches: the pointer parameters a kernel stores into.

A `@triton.jit` kernel (also under `triton.autotune` / `heuristics`): a
pointer parameter is written when an address built from it (arithmetic,
`tl.make_block_ptr(base=...)`, `tl.advance`, not values `tl.load` read)
reaches `tl.store` or a `tl.atomic_*`. A launch `kernel[grid](a, b)` then
writes the tensors bound to those parameters; the launch's literal arguments
decide the branches that test them (`dst = b_ptr if A_TO_B else a_ptr`).
"""
from __future__ import annotations

import ast

from ..model import FunctionNode
from .guards import Binding, evaluate
from .summaries import Write
from .syntax import last_name, parameters_of

_TRITON_STORES = frozenset({"store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                            "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas"})
# Calls whose result is still an address built from their first argument.
_POINTER_CALLS = frozenset({"make_block_ptr", "advance", "multiple_of", "max_contiguous",
                            "max_constancy", "to", "broadcast_to", "reshape", "expand_dims"})
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
    parameters = parameters_of(node)
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
