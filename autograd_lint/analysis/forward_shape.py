"""What forward returns, read off its syntax through its local names: its
inputs unchanged (or views or copies of them), or a piecewise-constant
function of them (rounding, signs, thresholds). Either way backward differs
from the derivative on purpose (`FunctionFacts.deliberate_gradient`).
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from ..model import FunctionNode
from .syntax import last_name, rebound_names


def deliberate_gradient_of(forward: FunctionNode, inputs: set[str],
                           changes_outputs_in_place: Callable[[], bool]) -> str | None:
    """"identity" when every return of forward is its inputs unchanged (and
    forward does not change what it returns in place: asked only then),
    "piecewise-constant" when every return is a staircase of them, else None."""
    shape = _ForwardShape(forward, inputs)
    returns = [node.value for node in ast.walk(forward)
               if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return None
    if not changes_outputs_in_place() and \
            all(shape.identity_result(expr) for expr in returns):
        return "identity"  # (`out = x.clone(); kernel[grid](out)` computes)
    if all(shape.piecewise_constant_result(expr) for expr in returns):
        return "piecewise-constant"
    return None


# Methods whose result is the same values as the receiver.
_SAME_VALUES = frozenset({"view", "view_as", "reshape", "reshape_as", "clone", "contiguous",
                          "expand_as", "expand", "flatten", "squeeze", "unsqueeze", "detach"})
# A value the shape analysis cannot see through (neither an input nor a staircase).
_OPAQUE = ast.Call(func=ast.Name(id="<opaque>", ctx=ast.Load()), args=[], keywords=[])
# Pytree maps: `tree_map(lambda t: t.clone(), args)` returns the same values.
_TREE_MAPS = frozenset({"tree_map", "tree_map_only", "map_structure"})
# Functions and methods with a zero derivative almost everywhere.
_PIECEWISE_CONSTANT = frozenset({"round", "floor", "ceil", "sign", "trunc", "fix", "bernoulli",
                                 "heaviside", "round_", "floor_", "ceil_", "sign_", "trunc_",
                                 "bernoulli_"})
_CONVERSIONS = frozenset({"float", "half", "double", "bfloat16", "to", "type_as", "type"})


def _low_precision(node: ast.expr) -> bool:
    """`torch.float8_e4m3fn`, `torch.int8`, `torch.uint8`: few representable values."""
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return last.startswith(("float8", "int", "uint"))


class _ForwardShape:
    """Syntactic facts about what forward returns, through its local names."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, inputs: set[str]) -> None:
        self.inputs = inputs
        self.bindings: dict[str, list[ast.expr]] = {}
        for stmt in ast.walk(node):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                self.bindings.setdefault(stmt.targets[0].id, []).append(stmt.value)
            elif isinstance(stmt, (ast.Assign, ast.For)):  # `q, k = helper(q, k)`: unknown
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for name in rebound_names(targets):
                    self.bindings.setdefault(name, []).append(_OPAQUE)
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and \
                    isinstance(stmt.target, ast.Name):
                self.bindings.setdefault(stmt.target.id, []).append(ast.Constant(None))
        # Locals handed to a call that may write them (`kernel[grid](out)`,
        # `fill(out)`): a copy of an input that a call may change is no
        # evidence of an identity forward.
        self.handed: set[str] = {
            arg.id for call in ast.walk(node) if isinstance(call, ast.Call)
            and not _reads_only(call.func)
            for arg in (*call.args, *(k.value for k in call.keywords))
            if isinstance(arg, ast.Name)}

    def identity_result(self, expr: ast.expr) -> bool:
        """`x`, `x.view_as(x)`, `x.clone()`, or a tuple of those and literals,
        with at least one input."""
        elements = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        kinds = [self._identity(e, frozenset()) for e in elements]
        return all(kinds) and any(kind == "input" for kind in kinds)

    def _identity(self, expr: ast.expr, seen: frozenset[str]) -> str | None:
        if isinstance(expr, ast.Constant):
            return "literal"
        if isinstance(expr, ast.Name):
            if expr.id in seen:  # `x = x.contiguous()`: back at the input itself
                return "input" if expr.id in self.inputs else None
            values = self.bindings.get(expr.id)
            if not values:
                return "input" if expr.id in self.inputs else None
            if expr.id in self.handed:
                return None
            kinds = {self._identity(v, seen | {expr.id}) for v in values}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr in _SAME_VALUES:
            return "input" if self._identity(expr.func.value, seen) == "input" else None
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            # `args[0]` of `*args`: one of the inputs
            return "input" if self._identity(expr.value, seen) == "input" else None
        if isinstance(expr, ast.IfExp):
            kinds = {self._identity(expr.body, seen), self._identity(expr.orelse, seen)}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(expr, ast.Call) and last_name(expr.func) in _TREE_MAPS and \
                len(expr.args) == 2 and isinstance(expr.args[0], ast.Lambda):
            mapped = expr.args[0]
            inner = _ForwardShape.__new__(_ForwardShape)
            inner.inputs = {a.arg for a in mapped.args.args}
            inner.bindings = {}
            if inner._identity(mapped.body, frozenset()) != "input":
                return None
            return "input" if self._identity(expr.args[1], seen) == "input" else None
        return None

    def piecewise_constant_result(self, expr: ast.expr) -> bool:
        elements = expr.elts if isinstance(expr, ast.Tuple) else [expr]
        return any(self._piecewise(e, 0) for e in elements) and all(
            self._piecewise(e, 0) or isinstance(e, ast.Constant) for e in elements)

    def _piecewise(self, expr: ast.expr, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(expr, ast.Name):
            values = self.bindings.get(expr.id)
            return bool(values) and all(self._piecewise(v, depth + 1) for v in values)
        if isinstance(expr, ast.BinOp):  # `torch.round(x / s) * s`: still a staircase
            sides = [expr.left, expr.right]
            # The other side scales or shifts: a number, a name, an attribute.
            return any(self._piecewise(side, depth + 1) for side in sides) and all(
                self._piecewise(side, depth + 1) or
                isinstance(side, (ast.Constant, ast.Name, ast.Attribute)) for side in sides)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _PIECEWISE_CONSTANT:
            return True
        if name == "to" and any(_low_precision(a) for a in (*expr.args,
                                                            *(k.value for k in expr.keywords))):
            return True  # a cast to float8 or an integer type is a staircase too
        if name in _CONVERSIONS | _SAME_VALUES and isinstance(func, ast.Attribute):
            receiver = func.value
            return isinstance(receiver, ast.Compare) or self._piecewise(receiver, depth + 1)
        if name in ("clamp", "clip") and isinstance(func, ast.Attribute):
            return self._piecewise(func.value, depth + 1)
        return False


# Calls that only look at their arguments.
_READ_ONLY_CALLS = frozenset({"isinstance", "len", "print", "hasattr", "getattr", "type", "id",
                              "is_tensor", "is_floating_point", "numel", "dim", "size"})


def _reads_only(func: ast.expr) -> bool:
    """`len(x)`, `isinstance(x, T)`, `ctx.save_for_backward(x)`, `x.view_as(y)`."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in ("ctx", "self"):
        return True
    name = last_name(func)
    return name in _READ_ONLY_CALLS or name in _SAME_VALUES or name in _TREE_MAPS


