"""Expressions: the abstract value of each expression (`e_<node type>`), and
the events evaluating it records: tensor arithmetic, gradients used as
tensors, `is None` tests, `.data` and `.grad`, `ctx.saved_tensors` reads.
Calls have a room of their own (calls.py).
"""
from __future__ import annotations

import ast
from dataclasses import replace
from functools import reduce

from . import torch_api as api
from .events import SAVED_ATTRS, Compute, CtxRead, DataAccess, GradRead, LeftAutograd
from .markers import FROM_SAVED, OWN_SAVED, is_gradient, param_names, taint_of
from .recorder import Room
from .syntax import constant_index, constant_slice, literal_text
from .values import (
    NONE,
    NONTENSOR,
    UNKNOWN,
    Kind,
    Value,
    element_of,
    item_roots,
    join,
    tuple_of,
)
from .walker import State, assume, join_states


class ExpressionEvaluator(Room):
    """The value of every expression but a call, in the state of its path."""

    def expr(self, node: ast.expr | None, state: State) -> Value:
        if node is None:
            return NONE
        if isinstance(node, ast.Call):  # the calls room's (calls.py)
            return self.calls.e_Call(node, state)
        handler = getattr(self, "e_" + type(node).__name__, None)
        if handler is not None:
            return handler(node, state)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, state)
        return UNKNOWN

    def qualname(self, node: ast.expr, state: State) -> str | None:
        """The qualified name of a dotted expression not rooted in a local."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or root.id in state.vars:
            return None
        return self.run.scope.resolve(node)

    def e_Constant(self, node: ast.Constant, state: State) -> Value:
        if node.value is None:
            return NONE
        return Value(Kind.NONTENSOR, literal=True, text=literal_text(node))

    def e_JoinedStr(self, node: ast.JoinedStr, state: State) -> Value:
        for child in node.values:
            self.expr(child, state)
        return Value(Kind.NONTENSOR, literal=True, text="f'...'")

    def e_FormattedValue(self, node: ast.FormattedValue, state: State) -> Value:
        self.expr(node.value, state)
        return NONTENSOR

    def e_Name(self, node: ast.Name, state: State) -> Value:
        return state.vars.get(node.id, UNKNOWN)

    def e_Lambda(self, node: ast.Lambda, state: State) -> Value:
        return NONTENSOR

    def e_NamedExpr(self, node: ast.NamedExpr, state: State) -> Value:
        value = self.expr(node.value, state)
        self.binder.bind(node.target, value, state, node, node.value)
        return value

    def e_Starred(self, node: ast.Starred, state: State) -> Value:
        return self.expr(node.value, state)

    def e_Slice(self, node: ast.Slice, state: State) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.expr(part, state)
        return NONTENSOR

    def e_Tuple(self, node: ast.Tuple | ast.List | ast.Set, state: State) -> Value:
        elems: list[Value] = []
        known = True
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                inner = self.expr(elt.value, state)
                if inner.elems is not None:
                    elems.extend(inner.elems)
                else:
                    known = False
                    elems.append(element_of(inner))
            else:
                elems.append(self.expr(elt, state))
        return tuple_of(elems, known=known)

    def e_List(self, node: ast.List, state: State) -> Value:
        value = self.e_Tuple(node, state)
        return replace(value, is_list=True)  # elements tracked; never a tuple result

    def e_Set(self, node: ast.Set, state: State) -> Value:
        value = self.e_Tuple(node, state)
        return replace(value, elems=None, item=element_of(value) if value.elems else None)

    def e_Dict(self, node: ast.Dict, state: State) -> Value:
        values = []
        for key, item in zip(node.keys, node.values, strict=False):
            if key is not None:
                self.expr(key, state)
            values.append(self.expr(item, state))
        return tuple_of(values, known=False)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       state: State) -> Value:
        first = node.generators[0]
        iterable = self.expr(first.iter, state)
        inner = state.copy()
        result = UNKNOWN
        for _ in range(2):  # the body may run many times: a second pass sees the first
            self.binder.bind(first.target, element_of(iterable), inner, node, None)
            for condition in first.ifs:
                self.expr(condition, inner)
            for gen in node.generators[1:]:
                self.binder.bind(gen.target, element_of(self.expr(gen.iter, inner)), inner, node,
                                 None)
                for condition in gen.ifs:
                    self.expr(condition, inner)
            if isinstance(node, ast.DictComp):
                self.expr(node.key, inner)
                result = self.expr(node.value, inner)
            else:
                result = self.expr(node.elt, inner)
        state.facts.update(inner.facts)
        kind = Kind.TENSORS if result.kind.holds_tensor else Kind.UNKNOWN
        is_list = isinstance(node, ast.ListComp)
        return Value(kind, result.roots, None, not isinstance(node, ast.GeneratorExp),
                     is_list=is_list, rest=result.roots if is_list else None, item=result,
                     taint=result.taint)

    e_ListComp = e_SetComp = e_GeneratorExp = e_DictComp = _comprehension

    def e_IfExp(self, node: ast.IfExp, state: State) -> Value:
        test = self.expr(node.test, state)
        decided = self.run.decided_truth(node.test, state)
        if decided is not None:  # a run specialized to the caller's flags
            return self.expr(node.body if decided else node.orelse, state)
        left_state, right_state = state.copy(), state.copy()
        flag = self.walker.caller_flag(node.test, test)
        if flag is not None:  # `(x.sub_(m) if valid is not None else ...)` knows what x is
            assume(left_state, flag[0], not flag[1])
            assume(right_state, flag[0], flag[1])
        left = self.expr(node.body, left_state)
        right = self.expr(node.orelse, right_state)
        joined = join_states([left_state, right_state])
        assert joined is not None
        state.vars, state.facts = joined.vars, joined.facts
        value = join(left, right)
        if flag is not None:
            # `out = x if inplace else torch.empty_like(x)`: a later branch on
            # the same flag decides which one `out` is (RULES.md, the event).
            text, negated = flag
            when_true, when_false = (right, left) if negated else (left, right)
            value = replace(value, decided_by=(text, when_true.roots, when_false.roots))
        return value

    def e_BoolOp(self, node: ast.BoolOp, state: State) -> Value:
        values = [self.expr(v, state) for v in node.values]
        if all(v.kind is Kind.NONTENSOR for v in values):
            return replace(NONTENSOR, taint=taint_of(*values))
        return reduce(join, values)

    def e_UnaryOp(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.expr(node.operand, state)
        taint = operand.taint
        if isinstance(node.op, ast.Not):
            return replace(NONTENSOR, taint=taint)
        if operand.literal:
            return Value(Kind.NONTENSOR, literal=True, text=literal_text(node))
        if operand.kind in (Kind.TENSOR, Kind.TENSORISH):
            self.run.grad_uses(node, state, operand)
            self.run.record(Compute(node))
            return Value(Kind.TENSOR, taint=taint, integral=operand.integral,
                         scalar=operand.scalar)
        if operand.kind is Kind.NONTENSOR:
            return replace(NONTENSOR, taint=taint)
        source = _input_of(operand)
        return Value(Kind.UNKNOWN, single=not operand.seq and operand.elems is None,
                     src=f"arith:{source}" if source else None, taint=taint)

    def e_Compare(self, node: ast.Compare, state: State) -> Value:
        values = [self.expr(node.left, state)] + [self.expr(c, state) for c in node.comparators]
        taint = taint_of(*values)
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            self._none_tests(node, values, state)
            return replace(NONTENSOR, taint=taint)
        if any(v.kind in (Kind.TENSOR, Kind.TENSORISH) for v in values):
            self.run.grad_uses(node, state, *values)
            return Value(Kind.TENSOR, taint=taint, integral=True)  # a boolean mask
        if all(v.kind is Kind.NONTENSOR for v in values):
            return replace(NONTENSOR, taint=taint)
        return Value(Kind.UNKNOWN, taint=taint, integral=True)  # a bool or a bool mask

    @staticmethod
    def _none_tests(node: ast.Compare, values: list[Value], state: State) -> None:
        """`g is None` / `g is not None`: the gradient g is tested on this path."""
        operands = [node.left, *node.comparators]
        pairs = zip(range(len(operands)), range(1, len(operands)), strict=False)
        for op, (left, right) in zip(node.ops, pairs, strict=False):
            if not isinstance(op, (ast.Is, ast.IsNot)):
                continue
            pair = (operands[left], operands[right])
            for index, other in ((left, pair[1]), (right, pair[0])):
                if isinstance(other, ast.Constant) and other.value is None:
                    for root in values[index].roots:
                        if root.startswith("grad:"):
                            state.add_fact("none_tested", root[5:])

    def e_BinOp(self, node: ast.BinOp, state: State) -> Value:
        left = self.expr(node.left, state)
        right = self.expr(node.right, state)
        if isinstance(node.op, ast.MatMult):
            self.run.add_evidence(left)
            self.run.add_evidence(right)
        if not (left.seq or right.seq):
            self.run.grad_uses(node, state, left, right)
        result = self.binop(type(node.op), left, right, node)
        if result.kind in (Kind.TENSOR, Kind.TENSORISH):
            self.run.record(Compute(node))
        return result

    def binop(self, op: type, left: Value, right: Value, node: ast.AST) -> Value:
        taint = left.taint | right.taint
        if left.seq or right.seq:
            right_node = node.right if isinstance(node, ast.BinOp) else getattr(node, "value", None)
            return replace(self._sequence_op(op, left, right, right_node), taint=taint)
        if op is ast.MatMult:
            return Value(Kind.TENSOR, taint=taint)
        tensors = (Kind.TENSOR, Kind.TENSORISH)
        if left.kind in tensors or right.kind in tensors:
            integral = all(v.integral for v in (left, right) if v.kind is not Kind.NONTENSOR)
            scalar = all(v.scalar or v.kind is Kind.NONTENSOR for v in (left, right))
            return Value(Kind.TENSOR, taint=taint, integral=integral and op in _INTEGRAL_OPS,
                         scalar=scalar)
        if left.kind is Kind.NONTENSOR and right.kind is Kind.NONTENSOR:
            return replace(NONTENSOR, taint=taint)
        # `x * 2`: arithmetic on one forward input and numbers. If forward
        # returns it, x must be a tensor (a Function's outputs are tensors).
        sources = {_input_of(v) for v in (left, right) if v.kind is not Kind.NONTENSOR}
        if len(sources) == 1 and None not in sources:
            return Value(Kind.UNKNOWN, single=True, src=f"arith:{sources.pop()}", taint=taint)
        # Arithmetic on a forward input or a number is one object, not a tuple.
        if all(v.single or v.kind is Kind.NONTENSOR or (v.src or "").startswith("input:")
               for v in (left, right)):
            return Value(Kind.UNKNOWN, single=True, taint=taint)
        return replace(UNKNOWN, taint=taint)

    @staticmethod
    def _sequence_op(op: type, left: Value, right: Value, right_node: ast.expr | None) -> Value:
        if op is ast.Add and left.seq and right.seq:
            if left.elems is not None and right.elems is not None and not left.is_list:
                return tuple_of(left.elems + right.elems)
            item = join(element_of(left), element_of(right))
            return Value(join(left, right).kind, left.roots | right.roots, None, True, item=item,
                         is_list=left.is_list)
        if op is ast.Mult and left.seq and left.elems is not None and \
                isinstance(right_node, ast.Constant) and isinstance(right_node.value, int) \
                and 0 <= right_node.value <= 64:  # `(None,) * 3`, `[None] * 3`
            return replace(tuple_of(left.elems * right_node.value), is_list=left.is_list)
        if op in (ast.Add, ast.Mult):
            seq = left if left.seq else right
            return Value(seq.kind, seq.roots, None, True, item=element_of(seq),
                         is_list=seq.is_list)
        return UNKNOWN

    def e_Subscript(self, node: ast.Subscript, state: State) -> Value:
        base = self.expr(node.value, state)
        index_value = self.expr(node.slice, state)
        index = constant_index(node.slice)
        if base.elems is not None and index is not None and \
                -len(base.elems) <= index < len(base.elems):
            return base.elems[index]
        if isinstance(node.slice, ast.Slice) and base.seq:
            return replace(base, elems=base.elems[constant_slice(node.slice)]
                           if base.elems is not None and constant_slice(node.slice) is not None
                           else None,
                           item=element_of(base) if base.elems is None or
                           constant_slice(node.slice) is None else None)
        if base.is_list and index is not None:
            element = element_of(base)
            return replace(element, roots=item_roots(base, index))
        if base.kind in (Kind.TENSOR, Kind.TENSORISH) and not base.seq:
            self.run.grad_uses(node, state, base)
            # Basic indexing (ints, slices, None, ...) is a view; indexing with
            # tensors, masks or lists (advanced indexing) copies.
            advanced = _advanced_index(node.slice, index_value)
            return Value(Kind.TENSOR, frozenset() if advanced else base.roots,
                         taint=base.taint, view=not advanced,  # indices carry no gradient
                         integral=base.integral, detached=base.detached and not advanced)
        if base.kind in (Kind.TENSORS, Kind.TENSORISH) or base.item is not None:
            return element_of(base)
        if base.kind is Kind.NONTENSOR:
            return replace(NONTENSOR, taint=base.taint)
        return Value(Kind.UNKNOWN, base.roots, taint=base.taint)

    def e_Attribute(self, node: ast.Attribute, state: State) -> Value:
        qualified = self.qualname(node, state)
        if qualified is not None:
            return NONTENSOR if _is_constant_name(qualified) else UNKNOWN
        base = self.expr(node.value, state)
        attr = node.attr
        if base.src == "ctx":
            return self._ctx_attribute(node, attr, state)
        if attr in api.STRONG_TENSOR_ATTRIBUTES:
            self.run.add_evidence(base)
        if attr != "grad":
            self.run.grad_uses(node, state, base)
        if attr in api.NON_TENSOR_ATTRIBUTES:
            return NONTENSOR  # sizes and dtypes carry no gradient
        if attr == "data":
            # No tensor evidence: project classes have `data` attributes too.
            self.run.record(DataAccess(node, base))
            taint = base.taint
            if is_gradient(base):
                key = self.run.marker("left", node)
                self.run.record(LeftAutograd(node, "`.data` of the gradient", key,
                                          param_names(base.roots), True))
                taint = taint | {key}
            kind = Kind.TENSOR if base.kind.holds_tensor else Kind.UNKNOWN
            return Value(kind, base.roots, taint=taint, view=True, detached=True)
        if attr in api.VIEW_ATTRIBUTES:
            kind = Kind.TENSOR if base.kind.holds_tensor or base.roots else Kind.UNKNOWN
            return Value(kind, base.roots, taint=base.taint, view=True, detached=base.detached)
        if attr == "grad":
            taint = base.taint
            # Only `.grad` of the very tensors that were saved: not of copies,
            # nor of tensors whose origin is unknown (a ctx attribute set
            # elsewhere, what a helper returned), nor of a value that may be
            # something else on some path (a list's element of unknown kind).
            if not base.detached and base.kind.holds_tensor and \
                    ("saved" in base.roots or OWN_SAVED in base.roots):
                key = self.run.marker("acc", node)
                self.run.record(GradRead(node, key))
                taint = taint | {key}
            return Value(Kind.TENSOR, maybe_none=True, taint=taint)
        return replace(UNKNOWN, taint=base.taint)

    def _ctx_attribute(self, node: ast.Attribute, attr: str, state: State) -> Value:
        if attr in SAVED_ATTRS:
            prior = state.add_fact("saved_tensors", node)
            self.run.record(CtxRead(node, attr, prior))
            return saved_tensors_value(self.run.saved_layout)
        if attr == "needs_input_grad":
            return Value(Kind.NONTENSOR, seq=True)
        if self.run.decided is not None and f"ctx.{attr}" in self.run.decided:
            return Value(Kind.NONTENSOR, src=f"decided:ctx.{attr}")  # a caller's flag
        return Value(Kind.UNKNOWN, frozenset({f"ctx:{attr}"}), src=f"ctx.{attr}")


def saved_tensors_value(layout: tuple[Value, ...] | None) -> Value:
    """`ctx.saved_tensors`: per position what forward saved, when known."""
    item = Value(Kind.TENSOR, frozenset({"saved"}), src="saved", taint=frozenset({FROM_SAVED}))
    elems = None
    if layout is not None:
        elems = tuple(
            replace(item, maybe_none=position.maybe_none or position.kind is Kind.NONE,
                    integral=position.integral,
                    # a copy detached before it was saved (or a tensor made
                    # from data) is outside the graph: it carries no gradient
                    detached=position.detached,
                    taint=frozenset() if position.integral or position.detached
                    else item.taint,
                    roots=position.roots if position.roots == {OWN_SAVED} else item.roots)
            for position in layout)
    return Value(Kind.TENSORS, frozenset({"saved"}), elems, True, src="saved", item=item,
                 taint=frozenset({FROM_SAVED}))


_INTEGRAL_OPS = frozenset({ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd,
                           ast.BitOr, ast.BitXor, ast.LShift, ast.RShift})

_DTYPE_NAMES = frozenset({
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "strided", "sparse_coo",
    "channels_last", "contiguous_format", "preserve_format", "inf", "nan", "pi", "e",
})


def _is_constant_name(qualified: str) -> bool:
    namespace, _, last = qualified.rpartition(".")
    return namespace in ("torch", "math") and last in _DTYPE_NAMES


def _advanced_index(node: ast.expr, value: Value) -> bool:
    """Whether an index certainly selects by tensor, mask or list (a copy)."""
    parts = value.elems if isinstance(node, ast.Tuple) and value.elems is not None else (value,)
    nodes = node.elts if isinstance(node, ast.Tuple) else [node]
    for part, part_node in zip(parts, nodes, strict=False):
        if part.kind in (Kind.TENSOR, Kind.TENSORISH, Kind.TENSORS) or part.is_list or \
                isinstance(part_node, (ast.List, ast.ListComp, ast.Compare)):
            return True
    return False


def _input_of(value: Value) -> str | None:
    """The forward input a value is, or is arithmetic on (`x`, `-x`, `x * 2`)."""
    src = value.src or ""
    if src.startswith("input:"):
        return src[6:]
    if src.startswith("arith:"):
        return src[6:]
    return None
