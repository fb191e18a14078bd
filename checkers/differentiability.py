"""Differentiability of backward and torch.func support: AGF201, AGF202, AGF204,
AGF214, AGF302, AGF303.

Most of these follow data, not aliases: the interpreter tags values with what
they were computed from (a gradient argument, a saved tensor, a `.numpy()`
call, a `torch.no_grad()` block, a `.grad` read), and a rule asks whether such a
value reaches a `return` of backward.
"""
from __future__ import annotations

import ast
import re

from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.analysis.interpreter import (
    BackwardCall,
    GradRead,
    GradUse,
    LeftAutograd,
    MethodFacts,
    Return,
)
from autograd_lint.analysis.values import Kind
from autograd_lint.core.project import FunctionClass, Method

from .base import Checker, source_text


class DifferentiabilityChecker(Checker):
    family = "differentiability"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        for name in ("backward", "vjp"):
            method = fn.own.get(name)
            method_facts = facts.facts(name) if method is not None and method.node else None
            if method is None or method_facts is None:
                continue
            self.agf201_materialize_grads_unchecked(fn, facts, method_facts)
            self.agf204_backward_not_differentiable(fn, method, method_facts)
            self.agf214_backward_accumulates_grad(fn, method_facts)
            if name == "backward":
                self.agf202_needs_input_grad_unchecked(fn, method, method_facts)
        self.agf302_builtin_reimplementation(fn, facts)
        self.agf303_ctx_style_not_functorch(fn)

    # -- AGF201 ----------------------------------------------------------------
    def agf201_materialize_grads_unchecked(self, fn: FunctionClass, facts: FunctionFacts,
                                           method_facts: MethodFacts) -> None:
        turned_off = any(
            call.args and isinstance(call.args[0][0], ast.Constant)
            and call.args[0][0].value is False
            for call in facts.calls("set_materialize_grads"))
        if not turned_off:
            return
        always = _always_given(fn, facts)
        for use in method_facts.of(GradUse):
            if not use.tested and use.root != always:
                self.reporter.add("AGF201", use.node, function=fn.name, name=use.root)
                return

    # -- AGF202 ----------------------------------------------------------------
    def agf202_needs_input_grad_unchecked(self, fn: FunctionClass, method: Method,
                                          method_facts: MethodFacts) -> None:
        if not self.enabled("AGF202") or _reads_needs_input_grad(method.node):
            return
        computed = max((_computed_gradients(ret) for ret in method_facts.returns), default=0)
        if computed >= 2:
            self.reporter.add("AGF202", method.node, function=fn.name, count=computed)  # type: ignore[arg-type]

    # -- AGF204 ----------------------------------------------------------------
    def agf204_backward_not_differentiable(self, fn: FunctionClass, method: Method,
                                           method_facts: MethodFacts) -> None:
        if method.once_differentiable:
            return
        returned = frozenset().union(*(ret.value.taint for ret in method_facts.returns))
        lines: set[int] = set()
        for event in method_facts.of(LeftAutograd):
            line = getattr(event.node, "lineno", 0)
            if event.key in returned and line not in lines:
                lines.add(line)
                how = event.how[0].upper() + event.how[1:]
                self.reporter.add("AGF204", event.node, function=fn.name, how=how)

    # -- AGF214 ----------------------------------------------------------------
    def agf214_backward_accumulates_grad(self, fn: FunctionClass,
                                         method_facts: MethodFacts) -> None:
        calls = method_facts.of(BackwardCall)
        if not calls:
            return
        reads = {event.key for event in method_facts.of(GradRead)}
        call_text = _call_head(calls[0].node)
        for ret in method_facts.returns:
            if ret.value.taint & reads:
                self.reporter.add("AGF214", ret.node, function=fn.name, call=call_text)

    # -- AGF302 ----------------------------------------------------------------
    def agf302_builtin_reimplementation(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        if not self.enabled("AGF302") or fn.own.get("forward") is None:
            return
        op = _builtin_op(fn, facts)
        if op is not None:
            self.reporter.add("AGF302", fn.node, function=fn.name, name=fn.name, op=op)

    # -- AGF303 ----------------------------------------------------------------
    def agf303_ctx_style_not_functorch(self, fn: FunctionClass) -> None:
        forward = fn.own.get("forward")
        if forward is None or forward.node is None or fn.style != "ctx" or fn.ctx_confused:
            return
        if fn.method("vmap") is not None or not forward.params:
            return
        self.reporter.add("AGF303", fn.node, function=fn.name, name=fn.name)


def _reads_needs_input_grad(node: ast.AST | None) -> bool:
    return node is not None and any(isinstance(n, ast.Attribute) and n.attr == "needs_input_grad"
                                    for n in ast.walk(node))


def _computed_gradients(ret: Return) -> int:
    """Elements that are certainly tensors computed here (not None, not the
    incoming gradient passed through)."""
    values = ret.value.elems if ret.value.elems is not None else (ret.value,)
    return sum(1 for v in values
               if v.kind is Kind.TENSOR and not v.maybe_none
               and not (v.src or "").startswith("grad:")
               and not (v.view and any(r.startswith("grad:") for r in v.roots)))


def _call_head(node: ast.Call) -> str:
    return source_text(node.func, 40) + "(...)"


# ---------------------------------------------------------------------------
# AGF302: one built-in op, and its textbook derivative
# ---------------------------------------------------------------------------
# Canonical forms: `g` is the incoming gradient, `A`/`B` forward's inputs, `Y`
# its output. Spaces are dropped and `1.0` reads as `1`.
_CASTS = ("", ".float()", ".type_as(g)", ".to(g.dtype)", ".to(g)")
_DERIVATIVES: dict[str, list[set[str]]] = {
    "a + b": [{"g"}, {"g"}],
    "a - b": [{"g"}, {"-g"}],
    "a * b": [{"g*B", "B*g"}, {"g*A", "A*g"}],
    "-x": [{"-g"}],
    "a @ b": [{"g@B.t()", "g@B.T", "g.mm(B.t())", "torch.mm(g,B.t())", "torch.matmul(g,B.t())"},
              {"A.t()@g", "A.T@g", "A.t().mm(g)", "torch.mm(A.t(),g)",
               "torch.matmul(A.t(),g)"}],
    "torch.relu(x)": [{f"g*({t}>0){c}" for t in "AY" for c in _CASTS} |
                      {f"({t}>0){c}*g" for t in "AY" for c in _CASTS} |
                      {f"g.masked_fill({t}<=0,0)" for t in "AY"} |
                      {f"g.masked_fill({t}<0,0)" for t in "AY"}],
    "torch.sigmoid(x)": [{"g*Y*(1-Y)", "g*(Y*(1-Y))", "Y*(1-Y)*g", "g*(1-Y)*Y",
                          "(1-Y)*Y*g"}],
    "torch.tanh(x)": [{"g*(1-Y**2)", "g*(1-Y*Y)", "(1-Y**2)*g", "(1-Y*Y)*g",
                       "g*(1-Y.pow(2))"}],
    "torch.exp(x)": [{"g*Y", "Y*g"}],
}
_UNARY_CALLS = {
    "relu": "torch.relu(x)", "sigmoid": "torch.sigmoid(x)", "tanh": "torch.tanh(x)",
    "exp": "torch.exp(x)",
}
_BINARY_OPS = {ast.Add: "a + b", ast.Sub: "a - b", ast.Mult: "a * b", ast.MatMult: "a @ b"}


def _builtin_op(fn: FunctionClass, facts: FunctionFacts) -> str | None:
    forward = fn.forward
    backward = fn.own.get("backward")
    if forward is None or forward.node is None or backward is None or backward.node is None:
        return None
    op, operands, output = _forward_op(fn, forward.node)
    if op is None:
        return None
    grads = backward.params[1:]
    if len(grads) != 1 or backward.vararg is not None or not _plain_backward(backward.node):
        return None
    names = {grads[0].arg: "g"}
    for index, name in enumerate(operands):
        names[name] = "AB"[index]
    if output:
        names[output] = "Y"
    names.update(_saved_names(forward.node, backward.node, names))
    backward_facts = facts.facts("backward")
    returns = backward_facts.returns if backward_facts else []
    if not returns or any(r.node.value is None for r in returns):
        return None
    expected = _DERIVATIVES[op]
    for ret in returns:
        elements = ret.elements if ret.elements is not None else [ret.node.value]
        if len(elements) < len(expected):
            return None
        for element, accepted in zip(elements, expected, strict=False):
            if _canonical(element, names) not in accepted:
                return None
        if any(not (isinstance(e, ast.Constant) and e.value is None)
               for e in elements[len(expected):]):
            return None
    return _display(op, operands)


def _display(op: str, operands: list[str]) -> str:
    """`a + b` with forward's own names: `x + y`, `torch.relu(inp)`, `-x`."""
    if op in _BINARY_OPS.values():
        return f"{operands[0]} {op.split()[1]} {operands[1]}"
    if op == "-x":
        return f"-{operands[0]}"
    return op.replace("(x)", f"({operands[0]})")


def _plain_backward(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """backward only unpacks saved tensors and returns: no custom behaviour."""
    for stmt in node.body[:-1]:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute) and \
                stmt.value.attr == "saved_tensors":
            continue
        return False
    return bool(node.body) and isinstance(node.body[-1], ast.Return)


def _forward_op(fn: FunctionClass, node: ast.FunctionDef | ast.AsyncFunctionDef
                ) -> tuple[str | None, list[str], str | None]:
    """(op, operand input names, output name) when forward is one built-in op."""
    inputs = [a.arg for a in fn.inputs]
    body = [s for s in node.body if not _bookkeeping(s)]
    assigned: dict[str, ast.expr] = {}
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            return None, [], None
        assigned[stmt.targets[0].id] = stmt.value
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None, [], None
    expr = body[-1].value
    output = None
    if isinstance(expr, ast.Name) and expr.id in assigned:
        output, expr = expr.id, assigned[expr.id]
    if isinstance(expr, ast.BinOp) and type(expr.op) in _BINARY_OPS and \
            _names(expr.left, expr.right) and all(n in inputs for n in _names(expr.left,
                                                                               expr.right)):
        return _BINARY_OPS[type(expr.op)], _names(expr.left, expr.right), output
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub) and \
            isinstance(expr.operand, ast.Name) and expr.operand.id in inputs:
        return "-x", [expr.operand.id], output
    unary = _unary_call(expr, inputs)
    if unary is not None:
        return unary[0], [unary[1]], output
    return None, [], None


def _unary_call(expr: ast.expr, inputs: list[str]) -> tuple[str, str] | None:
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return None
    name = expr.func.attr
    receiver = expr.func.value
    # x.relu(), x.exp(), x.clamp(min=0)
    if isinstance(receiver, ast.Name) and receiver.id in inputs:
        if name in _UNARY_CALLS and not expr.args and not expr.keywords:
            return _UNARY_CALLS[name], receiver.id
        if name in ("clamp", "clamp_min") and _is_zero_lower_bound(expr):
            return "torch.relu(x)", receiver.id
        return None
    # torch.relu(x), F.relu(x), torch.clamp(x, min=0)
    if len(expr.args) >= 1 and isinstance(expr.args[0], ast.Name) and expr.args[0].id in inputs:
        if name in _UNARY_CALLS and len(expr.args) == 1 and not expr.keywords:
            return _UNARY_CALLS[name], expr.args[0].id
        if name in ("clamp", "clamp_min") and _is_zero_lower_bound(expr, skip=1):
            return "torch.relu(x)", expr.args[0].id
    return None


def _is_zero_lower_bound(call: ast.Call, skip: int = 0) -> bool:
    keywords = {kw.arg: kw.value for kw in call.keywords}
    args = call.args[skip:]
    bound = keywords.get("min", args[0] if args else None)
    return isinstance(bound, ast.Constant) and bound.value == 0 and "max" not in keywords \
        and len(args) <= 1


def _names(*nodes: ast.expr) -> list[str]:
    return [n.id for n in nodes if isinstance(n, ast.Name)] if all(
        isinstance(n, ast.Name) for n in nodes) else []


def _bookkeeping(stmt: ast.stmt) -> bool:
    """Docstrings, ctx.save_for_backward(...), ctx.attr = ..."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
            isinstance(stmt.value.func, ast.Attribute) and \
            stmt.value.func.attr in ("save_for_backward", "mark_non_differentiable"):
        return True
    return isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Attribute) for t in stmt.targets)


def _saved_names(forward: ast.AST, backward: ast.AST, known: dict[str, str]) -> dict[str, str]:
    """Map names unpacked from ctx.saved_tensors in backward to forward's names."""
    saved: list[str] = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "save_for_backward":
            saved = [a.id if isinstance(a, ast.Name) else "" for a in node.args]
    mapping: dict[str, str] = {}
    for node in ast.walk(backward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "saved_tensors" and len(node.targets) == 1 and \
                isinstance(node.targets[0], (ast.Tuple, ast.List)):
            for target, source in zip(node.targets[0].elts, saved, strict=False):
                if isinstance(target, ast.Name) and source in known:
                    mapping[target.id] = known[source]
    return mapping


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)


def _canonical(node: ast.expr, names: dict[str, str]) -> str:
    import copy

    renamed = _Renamer(names).visit(copy.deepcopy(node))
    text = re.sub(r"\s+", "", ast.unparse(renamed))
    return re.sub(r"(?<![\w.])1\.0(?![\d])", "1", text)


def _always_given(fn: FunctionClass, facts: FunctionFacts) -> str | None:
    """The gradient parameter of forward's only differentiable output: when
    every other output is non-differentiable, backward runs only when that
    one received a gradient, so it is never None there."""
    differentiable = facts.differentiable_outputs
    backward = fn.method("backward") or fn.method("vjp")
    count = facts.output_count
    if differentiable is None or len(differentiable) != 1 or backward is None or \
            count is None or count < 2 or backward.vararg is not None or \
            len(backward.params) - 1 != count:
        return None
    (index,) = differentiable
    return backward.params[1 + index].arg
