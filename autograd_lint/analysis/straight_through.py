"""Backwards that pass the incoming gradient straight through: every input
gets the output's gradient unchanged (a view, copy or dtype cast of it) or
None. Unless forward returns its input (forward_shape.py), that is a
straight-through estimator, a deliberate gradient (RULES.md, Precision
first): a cast to float8, a mask, a quantizer or a collective whose
gradient is declared to be the identity.
"""
from __future__ import annotations

import ast

from ..core.model import FunctionNode
from .syntax import local_values

# Methods whose result holds the receiver's values (in another view, copy,
# layout or dtype). Not forward_shape's `expand`: a gradient broadcast back
# to an input's shape is a reduction's derivative, not one passed through.
_SAME_VALUES = frozenset({"view", "view_as", "reshape", "reshape_as", "clone", "contiguous",
                          "detach", "to", "float", "half", "bfloat16", "double", "type_as",
                          "type"})


def passes_gradient_through(backward: FunctionNode) -> bool:
    """Whether every return of `backward` gives each input either None or
    one of its incoming gradients unchanged (at least one of them, somewhere),
    and nothing changes a gradient in place or hands it to a call first."""
    params = [a.arg for a in (*backward.args.posonlyargs, *backward.args.args)][1:]
    vararg = backward.args.vararg.arg if backward.args.vararg is not None else None
    gradients = set(params) | ({vararg} if vararg else set())
    if not gradients:
        return False
    passing = _PassThrough(backward, gradients)
    returns = [node.value for node in ast.walk(backward)
               if isinstance(node, ast.Return) and node.value is not None]
    kinds = [passing.kind_of_result(value) for value in returns]
    return bool(kinds) and all(kinds) and "gradient" in kinds and not passing.touched()


class _PassThrough:
    """What each local of a backward holds: an incoming gradient unchanged,
    None, or something else (None as the answer)."""

    def __init__(self, backward: FunctionNode, gradients: set[str]) -> None:
        self.backward = backward
        self.gradients = gradients
        self.bindings = local_values(backward)
        self.carriers: set[str] = set()  # locals that may hold a gradient

    def kind_of_result(self, expr: ast.expr) -> str | None:
        """"gradient" when the returned values pass at least one gradient
        through and the rest are None, "none" when all are None, else None."""
        elements = expr.elts if isinstance(expr, (ast.Tuple, ast.List)) else [expr]
        kinds = {self._kind(element, frozenset()) for element in elements}
        if None in kinds:
            return None
        return "gradient" if "gradient" in kinds else "none"

    def _kind(self, expr: ast.expr, seen: frozenset[str]) -> str | None:
        if isinstance(expr, ast.Constant) and expr.value is None:
            return "none"
        if isinstance(expr, ast.Starred):
            return self._kind(expr.value, seen)
        if isinstance(expr, ast.Name):
            return self._name_kind(expr.id, seen)
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and \
                isinstance(expr.value, ast.Name) and expr.value.id in self.gradients and \
                expr.value.id not in self.bindings:  # `grad_outputs[0]` of `*grad_outputs`
            self.carriers.add(expr.value.id)
            return "gradient"
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr in _SAME_VALUES:
            return "gradient" if self._kind(expr.func.value, seen) == "gradient" else None
        if isinstance(expr, ast.IfExp):
            kinds = {self._kind(expr.body, seen), self._kind(expr.orelse, seen)}
            if None in kinds:
                return None
            return "gradient" if "gradient" in kinds else "none"
        return None

    def _name_kind(self, name: str, seen: frozenset[str]) -> str | None:
        values = self.bindings.get(name)
        if not values or name in seen:
            if name in self.gradients:
                self.carriers.add(name)
                return "gradient"
            return None
        kinds = {self._kind(v, seen | {name}) if v is not None else None for v in values}
        if name in self.gradients:  # `grad = grad.contiguous()`: still the gradient
            kinds.add("gradient")
        if None in kinds:
            return None
        if "gradient" in kinds:
            self.carriers.add(name)
            return "gradient"
        return "none"

    def touched(self) -> bool:
        """Whether a local that holds a gradient is changed in place (`g.mul_(s)`,
        `g[mask] = 0`) or handed to a call that may change it."""
        for node in ast.walk(self.backward):
            if isinstance(node, (ast.Subscript, ast.Attribute)) and \
                    isinstance(node.ctx, ast.Store) and self._root(node) in self.carriers:
                return True
            if isinstance(node, ast.AugAssign) and self._root(node.target) in self.carriers:
                return True
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr.endswith("_") and \
                    not func.attr.startswith("_") and self._root(func.value) in self.carriers:
                return True
            if any(isinstance(arg, ast.Name) and arg.id in self.carriers
                   for arg in (*node.args, *(k.value for k in node.keywords))):
                return True
        return False

    @staticmethod
    def _root(expr: ast.expr) -> str | None:
        while isinstance(expr, (ast.Subscript, ast.Attribute)):
            expr = expr.value
        return expr.id if isinstance(expr, ast.Name) else None
