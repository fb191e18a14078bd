"""What forward returns, read off its syntax through its local names: its
inputs unchanged (or views or copies of them), or a piecewise-constant
function of them (rounding, signs, thresholds). Either way backward differs
from the derivative on purpose (`FunctionFacts.deliberate_gradient`).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from ..core.model import FunctionNode
from .syntax import last_name, local_values, rebound_names

_NO_HELPERS: Mapping[str, FunctionNode] = {}


def deliberate_gradient_of(forward: FunctionNode, inputs: set[str],
                           changes_outputs_in_place: Callable[[], bool],
                           helpers: Mapping[str, FunctionNode] = _NO_HELPERS) -> str | None:
    """"identity" when every return of forward is its inputs unchanged (and
    forward does not change what it returns in place: asked only then),
    "piecewise-constant" when every return is a staircase of them (or, on
    some paths, the inputs unchanged: `if bits >= 16: return x`), else
    None. `helpers`: the module's defs by name (`quantize(x)` calls one)."""
    shape = _ForwardShape(forward, inputs, helpers)
    returns = [node.value for node in ast.walk(forward)
               if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return None
    staircases = [shape.piecewise_constant_result(expr) for expr in returns]
    if all(staircases):
        return "piecewise-constant"
    unchanged = changes_outputs_in_place()
    if not unchanged and all(shape.identity_result(expr) for expr in returns):
        return "identity"  # (`out = x.clone(); kernel[grid](out)` computes)
    if any(staircases) and not unchanged and all(
            staircase or shape.identity_result(expr)
            for staircase, expr in zip(staircases, returns, strict=True)):
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
                                 "bernoulli_", "bucketize", "searchsorted",
                                 "fake_quantize_per_tensor_affine",
                                 "fake_quantize_per_channel_affine", "quantize_per_tensor",
                                 "quantize_per_channel"})
_CONVERSIONS = frozenset({"float", "half", "double", "bfloat16", "to", "type_as", "type",
                          "dequantize"})
# Arithmetic that scales or shifts a staircase (`q.mul(s)`, `torch.mul(q, s)`).
_SCALINGS = frozenset({"mul", "div", "add", "sub", "true_divide", "multiply", "divide",
                       "mul_", "div_", "add_", "sub_"})
_CLAMPS = frozenset({"clamp", "clip", "clamp_", "clip_"})
# Constant tensors (`torch.ones_like(x)`): the branches of a thresholding `where`.
_CONSTANT_TENSORS = frozenset({"ones_like", "zeros_like", "full_like", "ones", "zeros", "full",
                               "tensor", "empty_like"})
_MAX_HELPER_DEPTH = 3


def _low_precision(node: ast.expr) -> bool:
    """`torch.float8_e4m3fn`, `torch.int8`, `torch.uint8`: few representable values."""
    last = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return last.startswith(("float8", "int", "uint"))


def _straight_assignments(node: FunctionNode) -> dict[str, list[ast.Assign]]:
    """Names bound only by plain assignments among forward's top-level
    statements (no branch, loop or unpacking binds them): a use of one reads
    the last assignment above it."""
    top = {id(stmt) for stmt in node.body}
    found: dict[str, list[ast.Assign]] = {}
    crooked: set[str] = set()
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and id(stmt) in top:
            found.setdefault(stmt.targets[0].id, []).append(stmt)
        elif isinstance(stmt, ast.Assign):
            crooked.update(rebound_names(stmt.targets))
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.AugAssign, ast.AnnAssign,
                               ast.NamedExpr, ast.comprehension)):
            crooked.update(rebound_names([stmt.target]))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            crooked.update(rebound_names([i.optional_vars for i in stmt.items
                                          if i.optional_vars is not None]))
    return {name: sorted(assignments, key=lambda a: a.lineno)
            for name, assignments in found.items() if name not in crooked}


class _ForwardShape:
    """Syntactic facts about what forward returns, through its local names."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, inputs: set[str],
                 helpers: Mapping[str, FunctionNode] = _NO_HELPERS, depth: int = 0) -> None:
        self.inputs = inputs
        self.helpers = helpers
        self.depth = depth
        self.bindings: dict[str, list[ast.expr]] = {
            name: [_OPAQUE if value is None else value for value in values]
            for name, values in local_values(node).items()}
        self.straight = _straight_assignments(node)
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
                (expr.func.attr in _SAME_VALUES or _copy_of_itself(expr)):
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
            values = self._reaching(expr)
            return bool(values) and all(self._piecewise(v, depth + 1) for v in values)
        if isinstance(expr, ast.UnaryOp):  # `-q`
            return self._piecewise(expr.operand, depth + 1)
        if isinstance(expr, ast.BinOp):  # `torch.round(x / s) * s`: still a staircase
            return self._scaled([expr.left, expr.right], depth)
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _PIECEWISE_CONSTANT:
            return True
        if name == "to" and any(_low_precision(a) for a in (*expr.args,
                                                            *(k.value for k in expr.keywords))):
            return True  # a cast to float8 or an integer type is a staircase too
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if name in _CONVERSIONS | _SAME_VALUES and receiver is not None:
            return isinstance(receiver, ast.Compare) or self._piecewise(receiver, depth + 1)
        if name in _CLAMPS and receiver is not None:  # `q.clamp(lo, hi)`, `torch.clamp(q, lo, hi)`
            return self._piecewise(receiver, depth + 1) or \
                bool(expr.args) and self._piecewise(expr.args[0], depth + 1)
        if name in _SCALINGS and receiver is not None:  # `q.mul(s)`, `torch.mul(q, s)`
            operands = list(expr.args) if self._module_name(receiver) else [receiver, *expr.args]
            return self._scaled(operands, depth)
        if name == "where" and len(expr.args) == 3:
            return self._thresholded(expr.args, depth)
        return isinstance(func, ast.Name) and self._helper_staircase(func.id, expr)

    def _module_name(self, expr: ast.expr) -> bool:
        """`torch` in `torch.mul(q, s)`: a name forward neither takes nor binds."""
        return isinstance(expr, ast.Name) and expr.id not in self.inputs and \
            expr.id not in self.bindings and expr.id not in self.straight

    def _reaching(self, name: ast.Name) -> list[ast.expr]:
        """The values a name may hold where it is read: the last plain
        assignment above the read, or every binding of a name bound in
        branches or loops."""
        assignments = self.straight.get(name.id)
        if assignments is None:
            return self.bindings.get(name.id, [])
        above = [a for a in assignments if (a.end_lineno or a.lineno) < name.lineno]
        return [above[-1].value] if above else []

    def _scaled(self, operands: list[ast.expr], depth: int) -> bool:
        """A staircase scaled or shifted by numbers, names or attributes; a
        0/1 mask times a variable (`x * (x > 0).float()`) masks it instead."""
        steps = [side for side in operands if self._piecewise(side, depth + 1)]
        others = [side for side in operands if not any(side is step for step in steps)]
        if not steps or not all(isinstance(side, (ast.Constant, ast.Name, ast.Attribute))
                                for side in others):
            return False
        return all(isinstance(side, ast.Constant) for side in others) or \
            not any(self._mask(step, depth + 1) for step in steps)

    def _mask(self, expr: ast.expr, depth: int) -> bool:
        """A comparison, or a conversion of one (`(x > 0).float()`)."""
        if depth > 8:
            return False
        if isinstance(expr, ast.Name):
            values = self._reaching(expr)
            return bool(values) and all(self._mask(v, depth + 1) for v in values)
        if isinstance(expr, ast.Compare):
            return True
        func = expr.func if isinstance(expr, ast.Call) else None
        return isinstance(func, ast.Attribute) and \
            func.attr in _CONVERSIONS | _SAME_VALUES and self._mask(func.value, depth + 1)

    def _thresholded(self, args: list[ast.expr], depth: int) -> bool:
        """`torch.where(x > 0, 1.0, -1.0)`: a threshold choosing between constants."""
        condition, *branches = args
        return (isinstance(condition, ast.Compare) or self._piecewise(condition, depth + 1)) and \
            all(self._constant(branch) or self._piecewise(branch, depth + 1) for branch in branches)

    @staticmethod
    def _constant(expr: ast.expr) -> bool:
        if isinstance(expr, ast.UnaryOp):
            expr = expr.operand
        return isinstance(expr, ast.Constant) or isinstance(expr, ast.Call) and \
            last_name(expr.func) in _CONSTANT_TENSORS

    def _helper_staircase(self, name: str, call: ast.Call) -> bool:
        """A def of forward's module (`quantize(x, s)`) whose every return is
        a staircase of its parameters."""
        helper = self.helpers.get(name)
        if helper is None or self.depth >= _MAX_HELPER_DEPTH:
            return False
        args = helper.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        shape = _ForwardShape(helper, params, self.helpers, self.depth + 1)
        returns = [node.value for node in ast.walk(helper)
                   if isinstance(node, ast.Return) and node.value is not None]
        return bool(returns) and all(shape.piecewise_constant_result(r) for r in returns)


def _copy_of_itself(call: ast.Call) -> bool:
    """`x.new(x)`: the legacy constructor copying the tensor it is called on."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "new" and len(call.args) == 1 and \
        not call.keywords and ast.dump(call.args[0]) == ast.dump(func.value)


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


