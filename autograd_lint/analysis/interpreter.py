"""A path-sensitive abstract interpreter for one method of a Function.

It walks a method's statements in execution order. On every path it keeps
the abstract value of each local name (tensor-valued or not, which root
tensors it may alias, tuple elements) and a set of path facts (which
`save_for_backward` calls and `saved_tensors` reads already ran). Branches are
analysed separately and joined afterwards; `return`, `raise`, `break` and
`continue` end a path; loops run to a fixpoint. Rebinding a name on one branch
therefore ends an alias on that branch only.

The interpreter does not judge anything: it records events (a ctx attribute
store, a ctx method call, an in-place change, a return, ...) with the values
involved, and the checkers decide what is a finding.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import Callable, Iterable, Union

from . import torch_api as api
from .values import (NONE, NONTENSOR, UNKNOWN, Kind, Value, element_of, item_roots, join,
                     list_slots, tuple_of)
from ..model import ModuleInfo, Scope, collect_imports

_MAX_LOOP_PASSES = 4

CTX_SAVE_METHODS = frozenset({
    "save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
})
CTX_OTHER_METHODS = frozenset({"set_materialize_grads", "mark_shared_storage"})
SAVED_ATTRS = frozenset({"saved_tensors", "saved_variables"})

# Tensor methods that also exist on modules, builtins or NumPy arrays under
# the same name: calling them is no evidence that the receiver is a tensor.
_AMBIGUOUS_METHODS = frozenset({
    "to", "float", "double", "half", "bfloat16", "cpu", "cuda", "type", "apply", "int",
    "long", "bool", "short", "char", "byte", "copy", "index", "count", "split", "real",
    "imag", "conj", "round", "new", "max", "min", "all", "any", "repeat", "put",
    "take", "item", "tolist", "std", "var", "prod", "cumsum", "cumprod", "dot",
    "nonzero", "trace", "clip", "argmax", "argmin", "argsort", "sort", "flatten",
    "diagonal", "transpose", "squeeze", "mean", "reshape", "astype", "fill",
})
EVIDENCE_METHODS = (api.TENSOR_METHODS | api.VIEW_METHODS | api.STRONG_TENSOR_METHODS
                    | api.SEQUENCE_METHODS) - _AMBIGUOUS_METHODS
# `.sum()` and `.view()` are named as tensor evidence by RULES.md.
EVIDENCE_METHODS = EVIDENCE_METHODS | {"sum", "view", "mean", "reshape", "transpose"}


# ---------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------
@dataclass
class CtxStore:
    """`ctx.attr = value` (also tuple targets and `setattr(ctx, "attr", v)`)."""

    node: ast.AST  # the statement (or setattr call)
    attr: str
    value: Value
    value_node: ast.expr | None


@dataclass
class CtxCall:
    """`ctx.save_for_backward(...)` and the other ctx methods."""

    node: ast.Call
    method: str
    args: list[tuple[ast.expr, Value, bool]]  # (node, value, starred)
    prior: frozenset[ast.AST]  # earlier calls of the same method on this path


@dataclass
class CtxRead:
    """A read of `ctx.saved_tensors` / `ctx.saved_variables`."""

    node: ast.Attribute
    attr: str
    prior: frozenset[ast.AST]  # earlier reads on this path


@dataclass
class Mutation:
    """An in-place change of the tensor `target` evaluates to."""

    node: ast.AST  # the in-place operation
    target: ast.expr  # the expression naming the changed tensor
    value: Value  # its abstract value (roots say what it may alias)
    how: str
    certain_tensor: bool  # the operation only exists on tensors (`x.add_()`)


@dataclass
class Return:
    node: ast.Return
    value: Value
    elements: list[ast.expr] | None  # the tuple display's elements, when visible


Event = Union[CtxStore, CtxCall, CtxRead, Mutation, Return]


@dataclass
class MethodFacts:
    """What one method does, as far as the interpreter can tell."""

    events: list[Event] = field(default_factory=list)
    evidence: set[str] = field(default_factory=set)  # inputs used as tensors
    falls_through: bool = False  # the end of the body is reachable (implicit None)
    has_yield: bool = False

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def returns(self) -> list[Return]:
        return self.of(Return)


# ---------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------
class State:
    __slots__ = ("vars", "facts")

    def __init__(self, vars: dict[str, Value] | None = None,
                 facts: dict[str, frozenset] | None = None) -> None:
        self.vars = vars if vars is not None else {}
        self.facts = facts if facts is not None else {}

    def copy(self) -> "State":
        return State(dict(self.vars), dict(self.facts))

    def add_fact(self, key: str, item: object) -> frozenset:
        before = self.facts.get(key, frozenset())
        self.facts[key] = before | {item}
        return before

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.vars == other.vars and self.facts == other.facts

    __hash__ = None  # type: ignore[assignment]


def join_states(states: Iterable[State | None]) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0].copy()
    out = State()
    for state in live:
        for name, value in state.vars.items():
            out.vars[name] = join(out.vars[name], value) if name in out.vars else value
        for key, items in state.facts.items():
            out.facts[key] = out.facts.get(key, frozenset()) | items
    return out


def _widen(state: State) -> State:
    """Drop what can grow without bound across loop passes (tuple lengths)."""
    return State({k: replace(v, elems=None, literal=False, text=None)
                  for k, v in state.vars.items()}, dict(state.facts))


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------
class Interpreter:
    """Runs over one method body; see the module docstring."""

    def __init__(self, module: ModuleInfo, scope: Scope,
                 node: ast.FunctionDef | ast.AsyncFunctionDef, initial: dict[str, Value]) -> None:
        self.scope = Scope(scope, "function", "")
        collect_imports(node.body, self.scope, module)
        self.node = node
        self.initial = initial
        self._events: dict[tuple[type, int, object], Event] = {}
        self.evidence: set[str] = set()
        self._loops: list[tuple[list[State], list[State]]] = []

    def run(self) -> MethodFacts:
        state = State(dict(self.initial))
        end = self.block(self.node.body, state)
        events = sorted(self._events.values(), key=_event_position)
        has_yield = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(self.node))
        return MethodFacts(events, self.evidence, end is not None, has_yield)

    def _record(self, event: Event) -> None:
        # Keyed by node: a loop's last (fixpoint) pass overwrites earlier passes.
        # One statement may hold several events (`ctx.a, ctx.b = a, b`).
        detail = event.attr if isinstance(event, CtxStore) else \
            id(event.target) if isinstance(event, Mutation) else 0
        self._events[(type(event), id(event.node), detail)] = event

    def _evidence(self, value: Value) -> None:
        if value.src and value.src.startswith("input:"):
            self.evidence.add(value.src[6:])

    # -- statements ------------------------------------------------------------
    def block(self, body: list[ast.stmt], state: State | None) -> State | None:
        for stmt in body:
            if state is None:
                return None  # unreachable code
            handler = getattr(self, "s_" + type(stmt).__name__, None)
            state = handler(stmt, state) if handler else self._generic_stmt(stmt, state)
        return state

    def _generic_stmt(self, stmt: ast.stmt, state: State) -> State | None:
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expr(child, state)
        return state

    def s_Expr(self, node: ast.Expr, state: State) -> State:
        self.expr(node.value, state)
        return state

    def s_Assign(self, node: ast.Assign, state: State) -> State:
        value = self.expr(node.value, state)
        for target in node.targets:
            self.bind(target, value, state, node, node.value)
        return state

    def s_AnnAssign(self, node: ast.AnnAssign, state: State) -> State:
        if node.value is not None:
            value = self.expr(node.value, state)
            self.bind(node.target, value, state, node, node.value)
        return state

    def s_AugAssign(self, node: ast.AugAssign, state: State) -> State:
        target = node.target
        op = _OPERATORS.get(type(node.op), "?")
        if isinstance(target, ast.Name):
            current = state.vars.get(target.id, UNKNOWN)
            operand = self.expr(node.value, state)
            self._record(Mutation(node, target, current, f"`{target.id} {op}= ...`", False))
            result = self._binop(type(node.op), current, operand)
            state.vars[target.id] = Value(result.kind, current.roots, result.elems, result.seq,
                                          False, current.maybe_none, current.src)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, state)
            self.expr(target.slice, state)
            self.expr(node.value, state)
            if base.seq:
                # `grads[i] += g` on a list: the element tensor changes in place.
                element = replace(element_of(base),
                                  roots=item_roots(base, constant_index(target.slice)))
                self._record(Mutation(node, target, element, f"`[...] {op}= ...`", False))
            else:
                self._record(Mutation(node, target.value, base, f"`[...] {op}= ...`", False))
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value, state)
            self.expr(node.value, state)
            if target.attr == "data":
                self._record(Mutation(node, target.value, base, f"`.data {op}= ...`", True))
        return state

    def s_Return(self, node: ast.Return, state: State) -> None:
        value = self.expr(node.value, state) if node.value is not None else NONE
        elements = list(node.value.elts) if isinstance(node.value, ast.Tuple) else None
        self._record(Return(node, value, elements))
        return None

    def s_Raise(self, node: ast.Raise, state: State) -> None:
        if node.exc is not None:
            self.expr(node.exc, state)
        return None

    def s_If(self, node: ast.If, state: State) -> State | None:
        self.expr(node.test, state)
        return join_states([self.block(node.body, state.copy()),
                            self.block(node.orelse, state.copy())])

    def s_For(self, node: ast.For, state: State) -> State | None:
        iterable = self.expr(node.iter, state)
        return self._loop(node, state, lambda s: self.bind(node.target, element_of(iterable), s,
                                                           node, None), infinite=False)

    s_AsyncFor = s_For

    def s_While(self, node: ast.While, state: State) -> State | None:
        infinite = isinstance(node.test, ast.Constant) and bool(node.test.value)
        return self._loop(node, state, lambda s: self.expr(node.test, s), infinite=infinite)

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, state: State,
              enter: Callable[[State], object], infinite: bool) -> State | None:
        head = state
        breaks: list[State] = []
        for attempt in range(_MAX_LOOP_PASSES + 1):
            self._loops.append(([], []))
            body_in = head.copy()
            enter(body_in)
            out = self.block(node.body, body_in)
            breaks, continues = self._loops.pop()
            new_head = join_states([head, out, *continues])
            assert new_head is not None
            if new_head == head:
                break
            head = _widen(new_head) if attempt >= _MAX_LOOP_PASSES - 1 else new_head
        exit_state = None if infinite else self.block(node.orelse, head.copy())
        return join_states([exit_state, *breaks])

    def s_Break(self, node: ast.Break, state: State) -> None:
        if self._loops:
            self._loops[-1][0].append(state)
        return None

    def s_Continue(self, node: ast.Continue, state: State) -> None:
        if self._loops:
            self._loops[-1][1].append(state)
        return None

    def s_With(self, node: ast.With, state: State) -> State | None:
        for item in node.items:
            self.expr(item.context_expr, state)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, UNKNOWN, state, node, None)
        return self.block(node.body, state)

    s_AsyncWith = s_With

    def s_Try(self, node: ast.Try, state: State) -> State | None:
        # A handler starts where a body statement raised: before that statement
        # completed. Join the states before each statement of the body.
        snapshots: list[State | None] = []
        current: State | None = state
        for stmt in node.body:
            if current is None:
                break
            snapshots.append(current.copy())
            current = self.block([stmt], current)
        handler_in = join_states(snapshots)
        outs: list[State | None] = [self.block(node.orelse, current) if current else None]
        for handler in node.handlers:
            entry = handler_in.copy() if handler_in is not None else None
            if entry is not None and handler.name:
                entry.vars[handler.name] = NONTENSOR
            outs.append(self.block(handler.body, entry))
        after = join_states(outs)
        if node.finalbody:
            if after is None:
                # Only abrupt exits: still look at the finally body.
                self.block(node.finalbody, handler_in.copy() if handler_in else State())
                return None
            return self.block(node.finalbody, after)
        return after

    s_TryStar = s_Try

    def s_Match(self, node: ast.Match, state: State) -> State | None:
        self.expr(node.subject, state)
        outs: list[State | None] = [state.copy()]
        for case in node.cases:
            entry = state.copy()
            for sub in ast.walk(case.pattern):
                name = getattr(sub, "name", None)
                if isinstance(name, str):
                    entry.vars[name] = UNKNOWN
            if case.guard is not None:
                self.expr(case.guard, entry)
            outs.append(self.block(case.body, entry))
        return join_states(outs)

    def s_FunctionDef(self, node: ast.FunctionDef, state: State) -> State:
        state.vars[node.name] = NONTENSOR  # nested bodies run at unknown times
        return state

    s_AsyncFunctionDef = s_FunctionDef
    s_ClassDef = s_FunctionDef

    def s_Delete(self, node: ast.Delete, state: State) -> State:
        for target in node.targets:
            if isinstance(target, ast.Name):
                state.vars.pop(target.id, None)
            else:
                self.expr(target, state)
        return state

    def s_Import(self, node: ast.Import | ast.ImportFrom, state: State) -> State:
        for alias in node.names:
            name = alias.asname or alias.name.split(".", 1)[0]
            state.vars.pop(name, None)  # resolved through self.scope from now on
        return state

    s_ImportFrom = s_Import

    def s_Pass(self, node: ast.stmt, state: State) -> State:
        return state

    s_Global = s_Nonlocal = s_Pass

    # -- binding ---------------------------------------------------------------
    def bind(self, target: ast.expr, value: Value, state: State, stmt: ast.AST,
             value_node: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            state.vars[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._bind_many(target.elts, value, state, stmt, value_node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Value(value.kind if value.seq else Kind.UNKNOWN,
                                          value.roots, seq=True), state, stmt, None)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value, state)
            if base.src == "ctx":
                self._record(CtxStore(stmt, target.attr, value, value_node))
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, state)
            self.expr(target.slice, state)
            if base.seq:  # a list/dict slot is replaced: no tensor changes
                self._store_item(target, base, value, state)
            else:
                self._record(Mutation(stmt, target.value, base, "item assignment `[...] = ...`",
                                      False))

    @staticmethod
    def _store_item(target: ast.Subscript, container: Value, item: Value, state: State) -> None:
        """`lst[i] = v`: the list now holds v at i (or may hold it anywhere)."""
        if not isinstance(target.value, ast.Name):
            return
        index = constant_index(target.slice)
        elems = container.elems
        roots = container.roots | item.roots
        if elems is not None and index is not None and -len(elems) <= index < len(elems):
            elems = elems[:index % len(elems)] + (item,) + elems[index % len(elems) + 1:]
            updated = replace(container, elems=elems,
                              roots=frozenset().union(*(e.roots for e in elems)))
        elif container.is_list and index is not None and index >= 0:
            pinned, rest = list_slots(container)
            pinned[index] = item.roots
            updated = replace(container, elems=None, roots=roots, rest=rest,
                              pinned=tuple(sorted(pinned.items())))
        else:
            pinned, rest = list_slots(container) if container.is_list else ({}, container.roots)
            updated = replace(container, elems=None, roots=roots, rest=rest | item.roots,
                              pinned=tuple((i, r | item.roots) for i, r in sorted(pinned.items())))
        state.vars[target.value.id] = updated

    def _bind_many(self, targets: list[ast.expr], value: Value, state: State, stmt: ast.AST,
                   value_node: ast.expr | None) -> None:
        value_elts = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else None
        starred = [i for i, t in enumerate(targets) if isinstance(t, ast.Starred)]
        elems = value.elems
        if elems is not None and not starred and len(elems) == len(targets):
            for i, (target, elem) in enumerate(zip(targets, elems)):
                node = value_elts[i] if value_elts and len(value_elts) == len(targets) else None
                self.bind(target, elem, state, stmt, node)
            return
        if elems is not None and len(starred) == 1 and len(elems) >= len(targets) - 1:
            cut = starred[0]
            tail = len(targets) - cut - 1
            for target, elem in zip(targets[:cut], elems[:cut]):
                self.bind(target, elem, state, stmt, None)
            middle = elems[cut: len(elems) - tail]
            self.bind(targets[cut].value, tuple_of(middle), state, stmt, None)  # type: ignore[attr-defined]
            for target, elem in zip(targets[cut + 1:], elems[len(elems) - tail:]):
                self.bind(target, elem, state, stmt, None)
            return
        element = element_of(value)
        for target in targets:
            self.bind(target, element, state, stmt, None)

    # -- expressions -------------------------------------------------------------
    def expr(self, node: ast.expr | None, state: State) -> Value:
        if node is None:
            return NONE
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
        return self.scope.resolve(node)

    def e_Constant(self, node: ast.Constant, state: State) -> Value:
        if node.value is None:
            return NONE
        return Value(Kind.NONTENSOR, literal=True, text=_literal_text(node))

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
        self.bind(node.target, value, state, node, node.value)
        return value

    def e_Starred(self, node: ast.Starred, state: State) -> Value:
        return self.expr(node.value, state)

    def e_Slice(self, node: ast.Slice, state: State) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.expr(part, state)
        return NONTENSOR

    def e_Tuple(self, node: ast.Tuple, state: State) -> Value:
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
        value = self.e_Tuple(node, state)  # type: ignore[arg-type]
        return replace(value, is_list=True)  # elements tracked; never a tuple result

    def e_Set(self, node: ast.Set, state: State) -> Value:
        value = self.e_Tuple(node, state)  # type: ignore[arg-type]
        return Value(value.kind, value.roots, None, True)

    def e_Dict(self, node: ast.Dict, state: State) -> Value:
        values = []
        for key, item in zip(node.keys, node.values):
            if key is not None:
                self.expr(key, state)
            values.append(self.expr(item, state))
        value = tuple_of(values, known=False)
        return Value(value.kind, value.roots, None, True)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       state: State) -> Value:
        first = node.generators[0]
        iterable = self.expr(first.iter, state)
        inner = state.copy()
        result = UNKNOWN
        for _ in range(2):  # the body may run many times: a second pass sees the first
            self.bind(first.target, element_of(iterable), inner, node, None)
            for condition in first.ifs:
                self.expr(condition, inner)
            for gen in node.generators[1:]:
                self.bind(gen.target, element_of(self.expr(gen.iter, inner)), inner, node, None)
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
                     is_list=is_list, rest=result.roots if is_list else None)

    e_ListComp = e_SetComp = e_GeneratorExp = e_DictComp = _comprehension

    def e_IfExp(self, node: ast.IfExp, state: State) -> Value:
        self.expr(node.test, state)
        left_state, right_state = state.copy(), state.copy()
        left = self.expr(node.body, left_state)
        right = self.expr(node.orelse, right_state)
        joined = join_states([left_state, right_state])
        assert joined is not None
        state.vars, state.facts = joined.vars, joined.facts
        return join(left, right)

    def e_BoolOp(self, node: ast.BoolOp, state: State) -> Value:
        values = [self.expr(v, state) for v in node.values]
        if all(v.kind is Kind.NONTENSOR for v in values):
            return NONTENSOR
        return reduce(join, values)

    def e_UnaryOp(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.expr(node.operand, state)
        if isinstance(node.op, ast.Not):
            return NONTENSOR
        if operand.literal:
            return Value(Kind.NONTENSOR, literal=True, text=_literal_text(node))
        if operand.kind in (Kind.TENSOR, Kind.TENSORISH):
            return Value(Kind.TENSOR)
        if operand.kind is Kind.NONTENSOR:
            return NONTENSOR
        source = _input_of(operand)
        return Value(Kind.UNKNOWN, single=not operand.seq and operand.elems is None,
                     src=f"arith:{source}" if source else None)

    def e_Compare(self, node: ast.Compare, state: State) -> Value:
        values = [self.expr(node.left, state)] + [self.expr(c, state) for c in node.comparators]
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return NONTENSOR
        if any(v.kind in (Kind.TENSOR, Kind.TENSORISH) for v in values):
            return Value(Kind.TENSOR)
        if all(v.kind is Kind.NONTENSOR for v in values):
            return NONTENSOR
        return UNKNOWN

    def e_BinOp(self, node: ast.BinOp, state: State) -> Value:
        left = self.expr(node.left, state)
        right = self.expr(node.right, state)
        if isinstance(node.op, ast.MatMult):
            self._evidence(left)
            self._evidence(right)
        return self._binop(type(node.op), left, right, node.right)

    def _binop(self, op: type, left: Value, right: Value,
               right_node: ast.expr | None = None) -> Value:
        if left.seq or right.seq:
            return self._sequence_op(op, left, right, right_node)
        if op is ast.MatMult:
            return Value(Kind.TENSOR)
        if left.kind in (Kind.TENSOR, Kind.TENSORISH) or right.kind in (Kind.TENSOR, Kind.TENSORISH):
            return Value(Kind.TENSOR)
        if left.kind is Kind.NONTENSOR and right.kind is Kind.NONTENSOR:
            return NONTENSOR
        # `x * 2`: arithmetic on one forward input and numbers. If forward
        # returns it, x must be a tensor (a Function's outputs are tensors).
        sources = {_input_of(v) for v in (left, right) if v.kind is not Kind.NONTENSOR}
        if len(sources) == 1 and None not in sources:
            return Value(Kind.UNKNOWN, single=True, src=f"arith:{sources.pop()}")
        # Arithmetic on a forward input or a number is one object, not a tuple.
        operands = (left, right)
        if all(v.single or v.kind is Kind.NONTENSOR or (v.src or "").startswith("input:")
               for v in operands):
            return Value(Kind.UNKNOWN, single=True)
        return UNKNOWN

    @staticmethod
    def _sequence_op(op: type, left: Value, right: Value, right_node: ast.expr | None) -> Value:
        if op is ast.Add and left.seq and right.seq:
            if left.elems is not None and right.elems is not None:
                return tuple_of(left.elems + right.elems)
            return Value(join(left, right).kind, left.roots | right.roots, None, True)
        if op is ast.Mult and left.seq and left.elems is not None and \
                isinstance(right_node, ast.Constant) and isinstance(right_node.value, int) \
                and 0 <= right_node.value <= 64:
            return tuple_of(left.elems * right_node.value)
        if op in (ast.Add, ast.Mult):
            seq = left if left.seq else right
            return Value(seq.kind, seq.roots, None, True)
        return UNKNOWN

    def e_Subscript(self, node: ast.Subscript, state: State) -> Value:
        base = self.expr(node.value, state)
        index_value = self.expr(node.slice, state)
        index = constant_index(node.slice)
        if base.elems is not None and index is not None and -len(base.elems) <= index < len(base.elems):
            return base.elems[index]
        if isinstance(node.slice, ast.Slice) and base.seq:
            return Value(base.kind, base.roots, None, True)
        if base.is_list and index is not None:
            element = element_of(base)
            return replace(element, roots=item_roots(base, index))
        if base.kind in (Kind.TENSOR, Kind.TENSORISH) and not base.seq:
            # Basic indexing (ints, slices, None, ...) is a view; indexing with
            # tensors, masks or lists (advanced indexing) copies.
            advanced = _advanced_index(node.slice, index_value)
            return Value(Kind.TENSOR, frozenset() if advanced else base.roots)
        if base.kind in (Kind.TENSORS, Kind.TENSORISH):
            return element_of(base)
        if base.kind is Kind.NONTENSOR:
            return NONTENSOR
        return Value(Kind.UNKNOWN, base.roots)

    def e_Attribute(self, node: ast.Attribute, state: State) -> Value:
        qualified = self.qualname(node, state)
        if qualified is not None:
            return NONTENSOR if _is_constant_name(qualified) else UNKNOWN
        base = self.expr(node.value, state)
        attr = node.attr
        if base.src == "ctx":
            if attr in SAVED_ATTRS:
                prior = state.add_fact("saved_tensors", node)
                self._record(CtxRead(node, attr, prior))
                return Value(Kind.TENSORS, frozenset({"saved"}), None, True, src="saved")
            if attr == "needs_input_grad":
                return Value(Kind.NONTENSOR, seq=True)
            return Value(Kind.UNKNOWN, src=f"ctx.{attr}")
        if attr in api.STRONG_TENSOR_ATTRIBUTES:
            self._evidence(base)
        if attr in api.NON_TENSOR_ATTRIBUTES:
            return NONTENSOR
        if attr in api.VIEW_ATTRIBUTES:
            kind = Kind.TENSOR if base.kind.holds_tensor or base.roots else Kind.UNKNOWN
            return Value(kind, base.roots)
        if attr == "grad":
            return Value(Kind.TENSOR, maybe_none=True)
        return UNKNOWN

    def e_Call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        qualified = self.qualname(func, state) if isinstance(func, (ast.Name, ast.Attribute)) else None
        receiver: Value | None = None
        if qualified is None:
            if isinstance(func, ast.Attribute):
                receiver = self.expr(func.value, state)
            elif not isinstance(func, ast.Name):
                self.expr(func, state)
        args = [self.expr(a, state) for a in node.args]
        kwargs = {kw.arg: self.expr(kw.value, state) for kw in node.keywords}
        if "out" in kwargs and qualified is not None and qualified.startswith("torch."):
            # `out=` writes into a tensor for torch's functions; elsewhere it is
            # just a keyword (`Context(out=out)`).
            out_node = next(kw.value for kw in node.keywords if kw.arg == "out")
            self._record(Mutation(node, out_node, kwargs["out"], "`out=`", True))
        if receiver is not None:
            assert isinstance(func, ast.Attribute)
            return self._method_call(node, func, receiver, args, kwargs, state)
        if qualified is not None:
            return self._function_call(node, qualified, args, kwargs)
        if isinstance(func, ast.Name) and func.id not in state.vars:
            return self._builtin_call(node, func.id, args, state)
        return UNKNOWN

    def _builtin_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        found, _ = self.scope.lookup(name)
        if found:
            return UNKNOWN  # a module-level def or import shadows the builtin
        if name == "setattr" and len(args) == 3 and args[0].src == "ctx":
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                self._record(CtxStore(node, attr.value, args[2], node.args[2]))
            return NONE
        if name in api.NON_TENSOR_BUILTINS:
            return NONTENSOR
        if name in api.SEQUENCE_BUILTINS:
            inner = args[0] if args else NONE
            kind = Kind.TENSORS if inner.kind.holds_tensor else Kind.UNKNOWN
            elems = inner.elems if name == "tuple" else None
            return Value(kind, inner.roots, elems, True)
        return UNKNOWN

    def _method_call(self, node: ast.Call, func: ast.Attribute, receiver: Value,
                     args: list[Value], kwargs: dict[str | None, Value], state: State) -> Value:
        name = func.attr
        if receiver.src == "ctx":
            return self._ctx_call(node, name, args, state)
        if receiver.is_list:
            if isinstance(func.value, ast.Name) and name in _LIST_MUTATORS:
                state.vars[func.value.id] = _list_after(receiver, name, args)
            return element_of(receiver) if name == "pop" else UNKNOWN
        if name in EVIDENCE_METHODS or (name.endswith("_") and not name.startswith("__")):
            self._evidence(receiver)
        if name.endswith("_") and not name.startswith("__") and name not in api.NOT_INPLACE_METHODS:
            if not _self_copy(name, func.value, node):
                self._record(Mutation(node, func.value, receiver, f"`.{name}()`", True))
            return Value(Kind.TENSOR, receiver.roots, src=receiver.src)
        tensor_receiver = receiver.kind in (Kind.TENSOR, Kind.TENSORISH) and not receiver.seq
        if name in api.NON_TENSOR_METHODS:
            return NONTENSOR
        if name in api.VIEW_SEQUENCE_METHODS:
            return Value(Kind.TENSORS, receiver.roots, None, True)
        if name in api.SEQUENCE_METHODS:
            return Value(Kind.TENSORS, frozenset(), None, True)
        if name in api.SEQUENCE_WITH_DIM_METHODS:
            return self._maybe_with_dim(args, kwargs)
        if name in api.VIEW_METHODS:
            certain = tensor_receiver or name in api.STRONG_TENSOR_METHODS
            return Value(Kind.TENSOR if certain else Kind.UNKNOWN, receiver.roots)
        if name in api.TENSOR_METHODS:
            certain = tensor_receiver or name in api.STRONG_TENSOR_METHODS
            return Value(Kind.TENSOR) if certain else UNKNOWN
        return UNKNOWN

    @staticmethod
    def _maybe_with_dim(args: list[Value], kwargs: dict[str | None, Value],
                        first: int = 0) -> Value:
        rest = args[first:]
        if "dim" in kwargs or (rest and rest[0].kind is Kind.NONTENSOR):
            return Value(Kind.TENSORS, seq=True)
        if not rest and not kwargs:
            return Value(Kind.TENSOR)
        if rest and rest[0].kind is Kind.TENSOR:
            return Value(Kind.TENSOR)
        return Value(Kind.TENSORISH)

    def _ctx_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        if name in CTX_SAVE_METHODS or name in CTX_OTHER_METHODS:
            entries = [(arg_node.value if isinstance(arg_node, ast.Starred) else arg_node, value,
                        isinstance(arg_node, ast.Starred))
                       for arg_node, value in zip(node.args, args)]
            prior = state.add_fact(name, node)
            self._record(CtxCall(node, name, entries, prior))
            if name in CTX_SAVE_METHODS:
                for value in args:
                    self._evidence(value)
            return NONE
        return UNKNOWN

    def _function_call(self, node: ast.Call, qualified: str, args: list[Value],
                       kwargs: dict[str | None, Value]) -> Value:
        last = qualified.rsplit(".", 1)[-1]
        if qualified in api.INPLACE_COLLECTIVES:
            index = api.INPLACE_COLLECTIVES[qualified]
            if index < len(node.args):
                self._record(Mutation(node, node.args[index], args[index], f"`{last}()`", True))
        elif qualified.startswith("torch.") and last.endswith("_") and not last.startswith("__") \
                and node.args and last not in api.NOT_INPLACE_METHODS:
            self._record(Mutation(node, node.args[0], args[0], f"`{qualified}()`", True))
        elif qualified.startswith("torch.nn.functional.") and node.args and any(
                kw.arg == "inplace" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in node.keywords):
            self._record(Mutation(node, node.args[0], args[0], f"`{last}(..., inplace=True)`", True))
        if qualified in api.TENSOR_ARG_FUNCTIONS and args:
            self._evidence(args[0])
        if qualified in api.ALL_TENSOR_ARGS_FUNCTIONS:
            for value in args:
                self._evidence(value)
        return self._torch_result(node, qualified, last, args, kwargs)

    @staticmethod
    def _torch_result(node: ast.Call, qualified: str, last: str, args: list[Value],
                      kwargs: dict[str | None, Value]) -> Value:
        if not qualified.startswith("torch."):
            return UNKNOWN
        if qualified in api.NON_TENSOR_FUNCTIONS:
            return NONTENSOR
        if qualified in api.OPAQUE_FUNCTIONS:
            return Value(Kind.UNKNOWN, src="rng")
        first_roots = args[0].roots if args else frozenset()
        if qualified in api.VIEW_FUNCTIONS:
            return Value(Kind.TENSOR, first_roots)
        if qualified in api.VIEW_SEQUENCE_FUNCTIONS:
            return Value(Kind.TENSORS, first_roots, None, True)
        flagged = any(kw.arg in api.TUPLE_FLAGS and not (isinstance(kw.value, ast.Constant)
                                                         and not kw.value.value)
                      for kw in node.keywords)
        if qualified in api.SEQUENCE_FUNCTIONS or flagged:
            return Value(Kind.TENSORS, seq=True)
        if qualified in api.SEQUENCE_WITH_DIM_FUNCTIONS:
            return Interpreter._maybe_with_dim(args, kwargs, first=1)
        if qualified == "torch.where" and len(args) == 1:
            return Value(Kind.TENSORS, seq=True)
        if api.is_tensor_class(qualified):
            return Value(Kind.TENSOR)
        if api.is_unknown_namespace(qualified):
            return UNKNOWN
        namespace = api.namespace_of(qualified)
        if namespace in api.TENSOR_NAMESPACES and last[:1].islower():
            return Value(Kind.TENSOR)
        return UNKNOWN

    # Unhandled expression kinds (Await, Yield, ...) fall back to visiting children.


_LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort",
                            "reverse"})


def _list_after(lst: Value, method: str, args: list[Value]) -> Value:
    """A list after `lst.append(v)`, `lst.extend(vs)`, `lst.sort()`, ...

    append and extend add at the end, so the positions already known stay
    known; the other methods move elements around."""
    added = frozenset().union(*(a.roots for a in args)) if args else frozenset()
    roots = lst.roots | added
    if method == "append" and len(args) == 1 and lst.elems is not None:
        return replace(tuple_of(lst.elems + (args[0],)), is_list=True)
    if method == "extend" and len(args) == 1 and lst.elems is not None and \
            args[0].elems is not None:
        return replace(tuple_of(lst.elems + args[0].elems), is_list=True)
    if method in ("append", "extend"):
        pinned, rest = list_slots(lst)
        return replace(lst, elems=None, roots=roots, pinned=tuple(sorted(pinned.items())),
                       rest=rest | added)
    return replace(lst, elems=None, roots=roots, pinned=(), rest=roots)

_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}

_DTYPE_NAMES = frozenset({
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "strided", "sparse_coo",
    "channels_last", "contiguous_format", "preserve_format", "inf", "nan", "pi", "e",
})


def _is_constant_name(qualified: str) -> bool:
    namespace, _, last = qualified.rpartition(".")
    return namespace in ("torch", "math") and last in _DTYPE_NAMES


def _literal_text(node: ast.expr) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every literal
        return "literal"
    return text if len(text) <= 40 else text[:37] + "..."


def constant_index(node: ast.expr) -> int | None:
    """The integer a subscript index literally is (`2`, `-1`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return None


def _advanced_index(node: ast.expr, value: Value) -> bool:
    """Whether an index certainly selects by tensor, mask or list (a copy)."""
    parts = value.elems if isinstance(node, ast.Tuple) and value.elems is not None else (value,)
    nodes = node.elts if isinstance(node, ast.Tuple) else [node]
    for part, part_node in zip(parts, nodes):
        if part.kind in (Kind.TENSOR, Kind.TENSORISH, Kind.TENSORS) or part.is_list or \
                isinstance(part_node, (ast.List, ast.ListComp, ast.Compare)):
            return True
    return False


def _self_copy(method: str, receiver: ast.expr, call: ast.Call) -> bool:
    """`t.copy_(t)`: copies a tensor onto itself, no value changes."""
    return (method == "copy_" and len(call.args) == 1 and isinstance(receiver, ast.Name)
            and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver.id)


def _input_of(value: Value) -> str | None:
    """The forward input a value is, or is arithmetic on (`x`, `-x`, `x * 2`)."""
    src = value.src or ""
    if src.startswith("input:"):
        return src[6:]
    if src.startswith("arith:"):
        return src[6:]
    return None


def _event_position(event: Event) -> tuple[int, int]:
    node = event.node
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def own_nodes(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function body, not descending into nested scopes."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(child))



