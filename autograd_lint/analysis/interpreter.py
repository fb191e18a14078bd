"""A path-sensitive abstract interpreter for one method of a Function.

It walks a method's statements in execution order. On every path it keeps
the abstract value of each local name (tensor-valued or not, which root
tensors it may alias, tuple elements, what it was computed from) and a set of
path facts (which `save_for_backward` calls and `saved_tensors` reads already
ran, which gradients were tested against None). Branches are analysed
separately and joined afterwards; `return`, `raise`, `break` and `continue` end
a path; loops run to a fixpoint. Rebinding a name on one branch therefore ends
an alias on that branch only.

The interpreter does not judge anything: it records events (a ctx attribute
store, a ctx method call, an in-place change, a return, a value leaving
autograd, ...) with the values involved, and the checkers decide what is a
finding.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import reduce

from ..model import ModuleInfo, Scope, collect_imports
from . import torch_api as api
from .effects import Effects, Summary, param_names
from .values import (
    NONE,
    NONTENSOR,
    UNKNOWN,
    Kind,
    Value,
    element_of,
    item_roots,
    join,
    list_slots,
    tuple_of,
)

_MAX_LOOP_PASSES = 4

CTX_SAVE_METHODS = frozenset({
    "save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
})
CTX_OTHER_METHODS = frozenset({"set_materialize_grads", "mark_shared_storage"})
SAVED_ATTRS = frozenset({"saved_tensors", "saved_variables"})
# The root of a saved tensor forward allocated for this node alone (neither an
# input, an output nor a view of one): no other code holds it. Other saved
# tensors have the root "saved".
OWN_SAVED = "saved:own"

# Taint markers of the two kinds of gradient-carrying values in backward.
FROM_GRAD = "src:grad"
FROM_SAVED = "src:saved"

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

# Methods that leave autograd: their result no longer carries a gradient.
_LEAVING_METHODS = frozenset({"numpy", "item", "tolist"})
# Methods whose receiver is kept: `x.requires_grad_()` returns x itself.
_CONTAINER_METHODS_STORING = frozenset({"append", "add", "extend", "insert", "setdefault",
                                        "update", "put", "put_nowait", "appendleft"})


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


@dataclass
class GradUse:
    """A gradient argument used in a tensor operation (not just passed on)."""

    node: ast.AST
    root: str  # the gradient parameter's name
    tested: bool  # an `is None` / `is not None` test on it ran before, on this path


@dataclass
class LeftAutograd:
    """A value computed outside autograd in backward (`.numpy()`, no_grad, ...).

    `key` is the taint marker the value carries, so a rule can tell whether it
    reaches a returned gradient."""

    node: ast.AST
    how: str
    key: str
    # When summarizing a helper (effects.py): the parameters whose values left
    # autograd here; None for a no_grad block (whatever it computes from).
    params: frozenset[str] | None = frozenset()
    on_gradient: bool = False  # `.detach()` / `.data`: only of the gradient itself


@dataclass
class GradRead:
    """`t.grad` of a tensor not detached in this method; `key` is its taint."""

    node: ast.Attribute
    key: str


@dataclass
class BackwardCall:
    """`torch.autograd.backward(...)` or `t.backward(...)`."""

    node: ast.Call


@dataclass
class Compute:
    """An expression that computes a new tensor (arithmetic, a torch op)."""

    node: ast.expr


@dataclass
class DataAccess:
    """`x.data`, read or written: `base` is what the analysis knows of `x`."""

    node: ast.Attribute
    base: Value


@dataclass
class CtxEscape:
    """ctx stored where it outlives the call."""

    node: ast.AST
    how: str


Event = (CtxStore | CtxCall | CtxRead | Mutation | Return | GradUse | LeftAutograd | GradRead
         | BackwardCall | Compute | CtxEscape | DataAccess)


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

    def copy(self) -> State:
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
    # A "tested" fact must hold on every path; the other facts on any path.
    for key in {k for state in live for k in state.facts}:
        sets = [state.facts.get(key, frozenset()) for state in live]
        out.facts[key] = frozenset.intersection(*sets) if key == "none_tested" else \
            frozenset().union(*sets)
    return out


def _widen(state: State) -> State:
    """Drop what can grow without bound across loop passes (tuple lengths)."""
    return State({k: replace(v, elems=None, literal=False, text=None, item=None)
                  for k, v in state.vars.items()}, dict(state.facts))


def _bind(node: ast.Call, summary: Summary, args: list[Value],
          kwargs: dict[str | None, Value]) -> dict[str, tuple[ast.expr, Value]]:
    """The call's arguments (expression, value) by the callee's parameter
    names; positions after a `*args` are unknown."""
    starred = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)),
                   len(node.args))
    bound = {name: (node.args[position], args[position])
             for name, position in summary.parameters
             if position is not None and position < starred}
    bound.update({k.arg: (k.value, kwargs[k.arg]) for k in node.keywords if k.arg is not None})
    return bound


def _is_gradient(value: Value) -> bool:
    """The incoming gradient (or, summarizing a helper, one of its parameters)."""
    return any(r.startswith(("grad:", "param:")) for r in value.roots)


def _carries_gradient(value: Value) -> bool:
    """Computed from the gradient or a saved tensor (or, summarizing a helper,
    from a parameter); integer tensors never carry a gradient."""
    return not value.integral and bool(
        value.taint & {FROM_GRAD, FROM_SAVED} or param_names(value.taint))


def _taint(*values: Value) -> frozenset[str]:
    return frozenset().union(*(v.taint for v in values)) if values else frozenset()


def _method_taint(name: str, receiver: Value, args: list[Value],
                  kwargs: dict[str | None, Value]) -> frozenset[str]:
    """What `receiver.name(*args)` is computed from: values, not sizes."""
    if name in api.METADATA_METHODS or name in api.FRESH_METHODS:
        return frozenset()
    if name in api.SHAPE_ARGUMENT_METHODS:
        return receiver.taint
    if name == "new_full":
        return _fill_taint(args, kwargs)
    return receiver.taint | _taint(*args, *kwargs.values())


def _function_taint(qualified: str, args: list[Value],
                    kwargs: dict[str | None, Value]) -> frozenset[str]:
    if qualified in api.FRESH_FUNCTIONS:
        return frozenset()
    if qualified in api.FILL_FUNCTIONS:
        return _fill_taint(args, kwargs)
    if qualified in api.SHAPE_ARGUMENT_FUNCTIONS:
        return args[0].taint if args else frozenset()
    return _taint(*args, *kwargs.values())


def _fill_taint(args: list[Value], kwargs: dict[str | None, Value]) -> frozenset[str]:
    """`full(size, fill_value)`, `full_like(x, fill_value)`, `t.new_full(size,
    fill_value)`: only the fill value is a value."""
    return _taint(*args[1:], *(v for k, v in kwargs.items() if k == "fill_value"))


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------
class Interpreter:
    """Runs over one method body; see the module docstring."""

    def __init__(self, module: ModuleInfo, scope: Scope,
                 node: ast.FunctionDef | ast.AsyncFunctionDef, initial: dict[str, Value],
                 saved_layout: tuple[Value, ...] | None = None,
                 effects: Effects | None = None) -> None:
        self.scope = Scope(scope, "function", "")
        collect_imports(node.body, self.scope, module)
        self.module = module
        self.effects = effects  # callees' summaries (effects.py); None: all opaque
        self.node = node
        self.initial = initial
        self.saved_layout = saved_layout
        self._events: dict[tuple[type, int, object], Event] = {}
        self.evidence: set[str] = set()
        self._loops: list[tuple[list[State], list[State]]] = []
        self._grad_off: list[str] = []  # taint keys of enclosing no_grad blocks
        self._globals: set[str] = set()
        args = node.args
        self._parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}

    def run(self) -> MethodFacts:
        state = State(dict(self.initial))
        end = self.block(self.node.body, state)
        events = sorted(self._events.values(), key=_event_position)
        has_yield = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(self.node))
        return MethodFacts(events, self.evidence, end is not None, has_yield)

    def _record(self, event: Event) -> None:
        # Keyed by node: a loop's last (fixpoint) pass overwrites earlier passes.
        # One node may hold several events (`ctx.a, ctx.b = a, b`; `g1 + g2`).
        if isinstance(event, CtxStore):
            detail: object = event.attr
        elif isinstance(event, Mutation):
            detail = id(event.target)
        elif isinstance(event, GradUse):
            detail = event.root
        else:
            detail = 0
        self._events[(type(event), id(event.node), detail)] = event

    def _marker(self, prefix: str, node: ast.AST) -> str:
        return f"{prefix}:{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0)}"

    def _evidence(self, value: Value) -> None:
        if value.src and value.src.startswith("input:"):
            self.evidence.add(value.src[6:])

    def _tensor_arguments(self, where: tuple[int | str, ...], args: list[Value],
                          kwargs: dict[str | None, Value]) -> None:
        """Evidence from arguments in positions that only take tensors."""
        for place in where:
            value = args[place] if isinstance(place, int) and place < len(args) else \
                kwargs.get(place) if isinstance(place, str) else None
            if value is not None:
                self._evidence(value)

    def _grad_uses(self, node: ast.AST, state: State, *values: Value) -> None:
        """Record gradient arguments used as tensors by this operation."""
        tested = state.facts.get("none_tested", frozenset())
        for value in values:
            for root in value.roots:
                if root.startswith("grad:"):
                    name = root[5:]
                    self._record(GradUse(node, name, name in tested))

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
            if not (current.seq or operand.seq):  # `t += (x,)` builds a new tuple
                self._record(Mutation(node, target, current, f"`{target.id} {op}= ...`", False))
            self._grad_uses(node, state, current, operand)
            result = self._binop(type(node.op), current, operand, node)
            state.vars[target.id] = replace(
                current, kind=result.kind, elems=result.elems, seq=result.seq, literal=False,
                text=None, taint=current.taint | result.taint | self._off_taint())
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, state)
            self.expr(target.slice, state)
            operand = self.expr(node.value, state)
            self._grad_uses(node, state, operand)
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
        if self._grad_off:
            value = replace(value, taint=value.taint | self._off_taint())
        elements = list(node.value.elts) if isinstance(node.value, ast.Tuple) else None
        self._record(Return(node, value, elements))
        if value.src == "ctx" or any(e.src == "ctx" for e in value.elems or ()):
            self._record(CtxEscape(node, "returned"))
        return None

    def s_Raise(self, node: ast.Raise, state: State) -> None:
        if node.exc is not None:
            self.expr(node.exc, state)
        return None

    def s_If(self, node: ast.If, state: State) -> State | None:
        test = self.expr(node.test, state)
        body, orelse = state.copy(), state.copy()
        flag = self._caller_flag(node.test, test)
        if flag is not None:  # `if not inplace:` knows what `x if inplace else y` is
            _assume(body, flag[0], not flag[1])
            _assume(orelse, flag[0], flag[1])
        return join_states([self.block(node.body, body), self.block(node.orelse, orelse)])

    def s_Assert(self, node: ast.Assert, state: State) -> State:
        self.expr(node.test, state)
        return state

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
        grad_off: ast.expr | None = None  # the context that turns grad mode off
        for item in node.items:
            self.expr(item.context_expr, state)
            if grad_off is None and self._is_grad_off(item.context_expr, state):
                grad_off = item.context_expr
            if item.optional_vars is not None:
                self.bind(item.optional_vars, UNKNOWN, state, node, None)
        if grad_off is None:
            return self.block(node.body, state)
        key = self._marker("left", node)
        self._record(LeftAutograd(node, f"a `{ast.unparse(grad_off)}` block", key, None))
        self._grad_off.append(key)
        try:
            return self.block(node.body, state)
        finally:
            self._grad_off.pop()

    s_AsyncWith = s_With

    def _is_grad_off(self, expr: ast.expr, state: State) -> bool:
        call = expr if isinstance(expr, ast.Call) else None
        target = call.func if call is not None else expr
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return False
        qualified = self.qualname(target, state) or ""
        if qualified in api.GRAD_OFF_CONTEXTS:
            return True
        if qualified in api.GRAD_MODE_SETTERS and call is not None and call.args:
            first = call.args[0]
            return isinstance(first, ast.Constant) and first.value is False
        return False

    def _off_taint(self) -> frozenset[str]:
        return frozenset(self._grad_off)

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

    def s_Global(self, node: ast.Global | ast.Nonlocal, state: State) -> State:
        self._globals.update(node.names)
        for name in node.names:
            state.vars.pop(name, None)
        return state

    s_Nonlocal = s_Global

    def s_Pass(self, node: ast.stmt, state: State) -> State:
        return state

    # -- binding ---------------------------------------------------------------
    def bind(self, target: ast.expr, value: Value, state: State, stmt: ast.AST,
             value_node: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self._bind_name(target.id, value, state, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._bind_many(target.elts, value, state, stmt, value_node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Value(value.kind if value.seq else Kind.UNKNOWN,
                                          value.roots, seq=True, taint=value.taint,
                                          item=value.item, is_list=True),
                      state, stmt, None)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value, state)
            if target.attr == "data" and base.src != "ctx":
                self._record(DataAccess(target, base))
            if base.src == "ctx":
                self._record(CtxStore(stmt, target.attr, value, value_node))
            elif value.src == "ctx" and self._nonlocal(target.value, state):
                self._record(CtxEscape(stmt, f"stored on `{ast.unparse(target.value)}`"))
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value, state)
            self.expr(target.slice, state)
            if value.src == "ctx" and self._nonlocal(target.value, state):
                self._record(CtxEscape(stmt, f"stored in `{ast.unparse(target.value)}`"))
            if base.seq:  # a list/dict slot is replaced: no tensor changes
                self._store_item(target, base, value, state)
            else:
                self._record(Mutation(stmt, target.value, base, "item assignment `[...] = ...`",
                                      False))

    def _bind_name(self, name: str, value: Value, state: State, stmt: ast.AST) -> None:
        if name in self._globals and value.src == "ctx":
            self._record(CtxEscape(stmt, f"assigned to the global `{name}`"))
        if self._grad_off:
            value = replace(value, taint=value.taint | self._off_taint())
        if value.kind in (Kind.TENSOR, Kind.TENSORISH) and not value.roots and not value.seq:
            # A new tensor: its own root, so that views of it can be recognised.
            value = replace(value, roots=frozenset({f"local:{name}"}), view=False)
        state.vars[name] = value

    def _nonlocal(self, node: ast.expr, state: State) -> bool:
        """A container expression that lives beyond this call (a global, a closure)."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id not in state.vars

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
            updated = replace(container, elems=None, roots=roots, rest=rest, item=None,
                              pinned=tuple(sorted(pinned.items())))
        else:
            pinned, rest = list_slots(container) if container.is_list else ({}, container.roots)
            updated = replace(container, elems=None, roots=roots, rest=rest | item.roots,
                              item=None,
                              pinned=tuple((i, r | item.roots) for i, r in sorted(pinned.items())))
        state.vars[target.value.id] = replace(updated, taint=updated.taint | item.taint)

    def _bind_many(self, targets: list[ast.expr], value: Value, state: State, stmt: ast.AST,
                   value_node: ast.expr | None) -> None:
        value_elts = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else None
        starred = [i for i, t in enumerate(targets) if isinstance(t, ast.Starred)]
        elems = value.elems
        if elems is not None and not starred and len(elems) == len(targets):
            for i, (target, elem) in enumerate(zip(targets, elems, strict=False)):
                node = value_elts[i] if value_elts and len(value_elts) == len(targets) else None
                self.bind(target, elem, state, stmt, node)
            return
        if elems is not None and len(starred) == 1 and len(elems) >= len(targets) - 1:
            cut = starred[0]
            tail = len(targets) - cut - 1
            for target, elem in zip(targets[:cut], elems[:cut], strict=False):
                self.bind(target, elem, state, stmt, None)
            middle = elems[cut: len(elems) - tail]
            self.bind(targets[cut].value, tuple_of(middle), state, stmt, None)  # type: ignore[attr-defined]
            for target, elem in zip(targets[cut + 1:], elems[len(elems) - tail:], strict=False):
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
                     is_list=is_list, rest=result.roots if is_list else None, item=result,
                     taint=result.taint)

    e_ListComp = e_SetComp = e_GeneratorExp = e_DictComp = _comprehension

    def e_IfExp(self, node: ast.IfExp, state: State) -> Value:
        test = self.expr(node.test, state)
        left_state, right_state = state.copy(), state.copy()
        left = self.expr(node.body, left_state)
        right = self.expr(node.orelse, right_state)
        joined = join_states([left_state, right_state])
        assert joined is not None
        state.vars, state.facts = joined.vars, joined.facts
        value = join(left, right)
        flag = self._caller_flag(node.test, test)
        if flag is not None:
            # `out = x if inplace else torch.empty_like(x)`: a later branch on
            # the same flag decides which one `out` is (RULES.md, the event).
            text, negated = flag
            when_true, when_false = (right, left) if negated else (left, right)
            value = replace(value, decided_by=(text, when_true.roots, when_false.roots))
        return value

    def _caller_flag(self, test: ast.expr, value: Value) -> tuple[str, bool] | None:
        """(the flag's text, negated) for a test on a flag the caller chooses:
        a parameter or ctx attribute (or its negation) that is not a tensor."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        flag = test.operand if negated else test  # type: ignore[attr-defined]
        if value.kind.holds_tensor:
            return None
        if isinstance(flag, ast.Name) and flag.id in self._parameters or \
                isinstance(flag, ast.Attribute) and isinstance(flag.value, ast.Name) and \
                self.initial.get(flag.value.id, UNKNOWN).src == "ctx":
            return ast.unparse(flag), negated
        return None


    def e_BoolOp(self, node: ast.BoolOp, state: State) -> Value:
        values = [self.expr(v, state) for v in node.values]
        if all(v.kind is Kind.NONTENSOR for v in values):
            return replace(NONTENSOR, taint=_taint(*values))
        return reduce(join, values)

    def e_UnaryOp(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.expr(node.operand, state)
        taint = operand.taint
        if isinstance(node.op, ast.Not):
            return replace(NONTENSOR, taint=taint)
        if operand.literal:
            return Value(Kind.NONTENSOR, literal=True, text=_literal_text(node))
        if operand.kind in (Kind.TENSOR, Kind.TENSORISH):
            self._grad_uses(node, state, operand)
            self._record(Compute(node))
            return Value(Kind.TENSOR, taint=taint, integral=operand.integral)
        if operand.kind is Kind.NONTENSOR:
            return replace(NONTENSOR, taint=taint)
        source = _input_of(operand)
        return Value(Kind.UNKNOWN, single=not operand.seq and operand.elems is None,
                     src=f"arith:{source}" if source else None, taint=taint)

    def e_Compare(self, node: ast.Compare, state: State) -> Value:
        values = [self.expr(node.left, state)] + [self.expr(c, state) for c in node.comparators]
        taint = _taint(*values)
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            self._none_tests(node, values, state)
            return replace(NONTENSOR, taint=taint)
        if any(v.kind in (Kind.TENSOR, Kind.TENSORISH) for v in values):
            self._grad_uses(node, state, *values)
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
            self._evidence(left)
            self._evidence(right)
        if not (left.seq or right.seq):
            self._grad_uses(node, state, left, right)
        result = self._binop(type(node.op), left, right, node)
        if result.kind in (Kind.TENSOR, Kind.TENSORISH):
            self._record(Compute(node))
        return result

    def _binop(self, op: type, left: Value, right: Value, node: ast.AST) -> Value:
        taint = left.taint | right.taint
        if left.seq or right.seq:
            right_node = node.right if isinstance(node, ast.BinOp) else getattr(node, "value", None)
            return replace(self._sequence_op(op, left, right, right_node), taint=taint)
        if op is ast.MatMult:
            return Value(Kind.TENSOR, taint=taint)
        tensors = (Kind.TENSOR, Kind.TENSORISH)
        if left.kind in tensors or right.kind in tensors:
            integral = all(v.integral for v in (left, right) if v.kind is not Kind.NONTENSOR)
            return Value(Kind.TENSOR, taint=taint, integral=integral and op in _INTEGRAL_OPS)
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
        if op is ast.Mult and left.seq and left.elems is not None and not left.is_list and \
                isinstance(right_node, ast.Constant) and isinstance(right_node.value, int) \
                and 0 <= right_node.value <= 64:
            return tuple_of(left.elems * right_node.value)
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
            return replace(base, elems=base.elems[_slice(node.slice)] if base.elems is not None
                           and _slice(node.slice) is not None else None,
                           item=element_of(base) if base.elems is None or
                           _slice(node.slice) is None else None)
        if base.is_list and index is not None:
            element = element_of(base)
            return replace(element, roots=item_roots(base, index))
        if base.kind in (Kind.TENSOR, Kind.TENSORISH) and not base.seq:
            self._grad_uses(node, state, base)
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
            self._evidence(base)
        if attr != "grad":
            self._grad_uses(node, state, base)
        if attr in api.NON_TENSOR_ATTRIBUTES:
            return NONTENSOR  # sizes and dtypes carry no gradient
        if attr == "data":
            # No tensor evidence: project classes have `data` attributes too.
            self._record(DataAccess(node, base))
            taint = base.taint
            if _is_gradient(base):
                key = self._marker("left", node)
                self._record(LeftAutograd(node, "`.data` of the gradient", key,
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
            # elsewhere, what a helper returned).
            if not base.detached and ("saved" in base.roots or OWN_SAVED in base.roots):
                key = self._marker("acc", node)
                self._record(GradRead(node, key))
                taint = taint | {key}
            return Value(Kind.TENSOR, maybe_none=True, taint=taint)
        return replace(UNKNOWN, taint=base.taint)

    def _ctx_attribute(self, node: ast.Attribute, attr: str, state: State) -> Value:
        if attr in SAVED_ATTRS:
            prior = state.add_fact("saved_tensors", node)
            self._record(CtxRead(node, attr, prior))
            return saved_tensors_value(self.saved_layout)
        if attr == "needs_input_grad":
            return Value(Kind.NONTENSOR, seq=True)
        return Value(Kind.UNKNOWN, frozenset({f"ctx:{attr}"}), src=f"ctx.{attr}")

    def e_Call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        qualified = self.qualname(func, state) if isinstance(func, (ast.Name, ast.Attribute)) \
            else None
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
        summary = self._callee_summary(node, state) \
            if self.effects is not None and receiver is None and not (
                isinstance(func, ast.Name) and func.id in state.vars) else None
        bound = _bind(node, summary, args, kwargs) if summary is not None else {}
        if summary is not None:
            self._callee_writes(node, summary, bound)
        if receiver is not None:
            assert isinstance(func, ast.Attribute)
            result = self._method_call(node, func, receiver, args, kwargs, state)
            taint = _method_taint(func.attr, receiver, args, kwargs)
        elif qualified is not None:
            result = self._function_call(node, qualified, args, kwargs, state)
            taint = _function_taint(qualified, args, kwargs)
        elif isinstance(func, ast.Name) and func.id not in state.vars:
            result = self._builtin_call(node, func.id, args, state)
            taint = frozenset() if func.id in api.METADATA_BUILTINS \
                and not self.scope.lookup(func.id)[0] else _taint(*args, *kwargs.values())
        else:
            result = UNKNOWN
            taint = _taint(*args, *kwargs.values())
        if summary is not None:
            result = self._aliased_result(summary, bound) or result
            taint = taint | self._left_in_callee(node, summary, bound)
        return replace(result, taint=result.taint | taint)

    def _left_in_callee(self, node: ast.Call, summary: Summary,
                        bound: dict[str, tuple[ast.expr, Value]]) -> frozenset[str]:
        """A helper whose result left autograd on a parameter (`.item()`, a
        no_grad block): an event here when the gradient (or a saved tensor) is
        what the call passes there."""
        key = self._marker("left", node)
        fired = False
        for leave in summary.leaves:
            if leave.name not in bound:
                continue
            value = bound[leave.name][1]
            carries = _is_gradient(value) if leave.on_gradient else _carries_gradient(value)
            if carries:
                params = param_names(value.roots if leave.on_gradient else value.taint)
                self._record(LeftAutograd(node, f"{leave.how} inside `{summary.callee}()`", key,
                                          params, leave.on_gradient))
                fired = True
        return frozenset({key}) if fired else frozenset()

    @staticmethod
    def _aliased_result(summary: Summary,
                        bound: dict[str, tuple[ast.expr, Value]]) -> Value | None:
        """What a helper returns, when it may be (a view of) its arguments."""
        def alias(names: frozenset[str]) -> Value:
            values = [bound[n][1] for n in names if n in bound]
            roots = frozenset().union(*(v.roots for v in values)) if values else frozenset()
            certain = any(v.kind is Kind.TENSOR for v in values)
            return Value(Kind.TENSOR if certain else Kind.UNKNOWN, roots, view=bool(roots),
                         detached=summary.result.detached)

        if summary.result.elements is not None:
            return Value(Kind.TENSORISH, frozenset(), tuple(alias(n)
                                                           for n in summary.result.elements))
        if summary.result.whole:
            return alias(summary.result.whole)
        return None

    def _callee_summary(self, node: ast.Call, state: State) -> Summary | None:
        """The summary of a helper or kernel launched here (effects.py), if any."""
        if isinstance(node.func, ast.Subscript):
            root = node.func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not isinstance(root, ast.Name) or root.id in state.vars:
                return None  # a local: `fns[i](x)`, `kernels[k][grid](...)` stay opaque
        assert self.effects is not None
        return self.effects.at_call(node, self.scope, self.module)

    def _callee_writes(self, node: ast.Call, summary: Summary,
                       bound: dict[str, tuple[ast.expr, Value]]) -> None:
        """The arguments the callee changes in place, as changes here."""
        for write in summary.writes:
            if write.name not in bound:
                continue
            target, value = bound[write.name]
            how = (f"`{summary.callee}[...]()` launch (the kernel stores into its "
                   f"`{write.name}`)" if summary.kernel else
                   f"`{summary.callee}()` call (it changes its `{write.name}` in place)")
            self._record(Mutation(node, target, value, how, write.certain))

    def _builtin_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        found, _ = self.scope.lookup(name)
        if found:
            return UNKNOWN  # a module-level def or import shadows the builtin
        if name == "setattr" and len(args) == 3 and args[0].src == "ctx":
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                self._record(CtxStore(node, attr.value, args[2], node.args[2]))
            return NONE
        if name in ("float", "int") and len(args) == 1 and args[0].kind is Kind.TENSOR:
            return self._leaving(node, f"`{name}()` of a tensor", args[0])
        if name in api.NON_TENSOR_BUILTINS:
            return NONTENSOR
        if name in api.SEQUENCE_BUILTINS:
            inner = args[0] if args else NONE
            kind = Kind.TENSORS if inner.kind.holds_tensor else Kind.UNKNOWN
            elems = inner.elems if name == "tuple" else None
            return Value(kind, inner.roots, elems, True, is_list=name == "list",
                         item=element_of(inner) if elems is None and args else None)
        return UNKNOWN

    def _method_call(self, node: ast.Call, func: ast.Attribute, receiver: Value,
                     args: list[Value], kwargs: dict[str | None, Value], state: State) -> Value:
        name = func.attr
        if receiver.src == "ctx":
            return self._ctx_call(node, name, args, state)
        if name in _CONTAINER_METHODS_STORING and any(a.src == "ctx" for a in args) and \
                self._nonlocal(func.value, state):
            self._record(CtxEscape(node, f"stored in `{ast.unparse(func.value)}`"))
        if receiver.seq:
            return self._container_call(node, func, receiver, args, state)
        if name in EVIDENCE_METHODS or (name.endswith("_") and not name.startswith("__")):
            self._evidence(receiver)
        if name in api.TENSOR_ARGUMENTS_OF_METHODS and (
                receiver.kind is Kind.TENSOR or name not in _AMBIGUOUS_METHODS):
            self._evidence(receiver)  # `gather`, `scatter_add`: names only tensors have
            self._tensor_arguments(api.TENSOR_ARGUMENTS_OF_METHODS[name], args, kwargs)
        if name == "backward":
            # `t.backward(g)`; `Other.backward(ctx, g)` is a Function's backward.
            if not any(a.src == "ctx" for a in args):
                self._record(BackwardCall(node))
            return UNKNOWN
        if name.endswith("_") and not name.startswith("__") and name not in api.NOT_INPLACE_METHODS:
            return self._inplace_method(node, func, name, receiver, state)
        if name in api.NOT_INPLACE_METHODS:
            return replace(receiver, kind=Kind.TENSOR)  # `x.requires_grad_()` returns x
        self._grad_uses(node, state, receiver)
        tensor_receiver = receiver.kind in (Kind.TENSOR, Kind.TENSORISH)
        if name in _LEAVING_METHODS:
            return self._leaving(node, f"`.{name}()`", receiver)
        if name in api.NON_TENSOR_METHODS:
            return NONTENSOR
        if name in api.VIEW_SEQUENCE_METHODS:
            item = Value(Kind.TENSOR, receiver.roots, view=True, integral=receiver.integral)
            return Value(Kind.TENSORS, receiver.roots, None, True, item=item)
        if name in api.INDICES_PAIR_METHODS or \
                (name in api.SEQUENCE_WITH_DIM_METHODS and _has_dim(args, kwargs)):
            return values_and_indices()
        if name in api.SEQUENCE_METHODS:
            return Value(Kind.TENSORS, frozenset(), None, True)
        if name in api.SEQUENCE_WITH_DIM_METHODS:
            if not args and not kwargs:  # `x.max()`: one value
                return Value(Kind.TENSOR if tensor_receiver else Kind.UNKNOWN, single=True)
            if args[0].kind is not Kind.TENSOR:
                return Value(Kind.TENSORISH)
        certain = tensor_receiver or name in api.STRONG_TENSOR_METHODS
        if name == "detach":
            return self._detach(node, receiver)
        if name in api.VIEW_METHODS:
            integral = receiver.integral or _converts_to_integral(name, node)
            aliases = name not in api.CONVERSION_METHODS
            return Value(Kind.TENSOR if certain else Kind.UNKNOWN,
                         receiver.roots if aliases else frozenset(), view=aliases,
                         integral=integral and name not in _FLOAT_CONVERSIONS,
                         detached=receiver.detached)
        if name in api.TENSOR_METHODS:
            if not certain:  # argmax/argsort/comparisons: integral whatever the receiver
                return Value(Kind.UNKNOWN, integral=name in api.INTEGRAL_METHODS)
            self._record(Compute(node))
            return Value(Kind.TENSOR, integral=name in api.INTEGRAL_METHODS or (
                receiver.integral and name not in _FLOAT_RESULTS))
        return UNKNOWN

    def _inplace_method(self, node: ast.Call, func: ast.Attribute, name: str, receiver: Value,
                        state: State) -> Value:
        if not _self_copy(name, func.value, node):
            self._record(Mutation(node, func.value, receiver, f"`.{name}()`", True))
        result = replace(receiver, kind=Kind.TENSOR)
        if isinstance(func.value, ast.Name) and receiver.kind is Kind.UNKNOWN \
                and func.value.id in state.vars:
            # Only tensors have `*_()` methods: the name holds a tensor.
            state.vars[func.value.id] = result
        return result

    def _detach(self, node: ast.Call, receiver: Value) -> Value:
        taint = receiver.taint
        if _is_gradient(receiver):
            key = self._marker("left", node)
            self._record(LeftAutograd(node, "`.detach()` of the gradient", key,
                                      param_names(receiver.roots), True))
            taint = taint | {key}
        return Value(Kind.TENSOR, receiver.roots, view=True, detached=True, taint=taint,
                     integral=receiver.integral)

    def _leaving(self, node: ast.Call, how: str, receiver: Value) -> Value:
        """`.numpy()`, `.item()`, `.tolist()`, `float(t)`: the result is
        outside autograd (integer tensors never carry a gradient)."""
        taint = receiver.taint
        if _carries_gradient(receiver):
            key = self._marker("left", node)
            self._record(LeftAutograd(node, how, key, param_names(taint)))
            taint = taint | {key}
        return Value(Kind.NONTENSOR, taint=taint)

    def _container_call(self, node: ast.Call, func: ast.Attribute, receiver: Value,
                        args: list[Value], state: State) -> Value:
        name = func.attr
        if receiver.is_list and isinstance(func.value, ast.Name) and name in _LIST_MUTATORS:
            state.vars[func.value.id] = _list_after(receiver, name, args)
        if name in ("pop", "get", "popleft"):
            return element_of(receiver)
        return UNKNOWN

    def _ctx_call(self, node: ast.Call, name: str, args: list[Value], state: State) -> Value:
        if name in CTX_SAVE_METHODS or name in CTX_OTHER_METHODS:
            entries = [(arg_node.value if isinstance(arg_node, ast.Starred) else arg_node, value,
                        isinstance(arg_node, ast.Starred))
                       for arg_node, value in zip(node.args, args, strict=False)]
            prior = state.add_fact(name, node)
            self._record(CtxCall(node, name, entries, prior))
            if name in CTX_SAVE_METHODS:
                for value in args:
                    self._evidence(value)
            return NONE
        return UNKNOWN

    def _function_call(self, node: ast.Call, qualified: str, args: list[Value],
                       kwargs: dict[str | None, Value], state: State) -> Value:
        last = qualified.rsplit(".", 1)[-1]
        if qualified in api.INPLACE_COLLECTIVES:
            index = api.INPLACE_COLLECTIVES[qualified]
            if index < len(node.args):
                self._record(Mutation(node, node.args[index], args[index], f"`{last}()`", True))
        elif qualified.startswith("torch.") and last.endswith("_") and not last.startswith("__") \
                and node.args and last not in api.NOT_INPLACE_METHODS:
            self._record(Mutation(node, node.args[0], args[0], f"`{qualified}()`", True))
        elif qualified.startswith("torch.nn.functional.") and node.args and any(
                kw.arg == "inplace" and isinstance(kw.value, ast.Constant)
                and kw.value.value is True for kw in node.keywords):
            self._record(Mutation(node, node.args[0], args[0], f"`{last}(..., inplace=True)`",
                                  True))
        if qualified in ("torch.autograd.backward",):
            self._record(BackwardCall(node))
        if qualified in api.TENSOR_ARG_FUNCTIONS and args:
            self._evidence(args[0])
        if qualified in api.TENSOR_ARGUMENTS_OF_FUNCTIONS:
            self._tensor_arguments(api.TENSOR_ARGUMENTS_OF_FUNCTIONS[qualified], args, kwargs)
        if qualified in api.TENSOR_SEQUENCE_FUNCTIONS and args and args[0].elems:
            for value in args[0].elems:
                self._evidence(value)
        carrying = [v for v in (*args, *kwargs.values()) if _carries_gradient(v)] \
            if qualified.startswith("numpy.") else []
        if carrying:
            key = self._marker("left", node)
            self._record(LeftAutograd(node, f"`{qualified.replace('numpy', 'np', 1)}()`", key,
                                      param_names(_taint(*carrying))))
            return Value(Kind.UNKNOWN, taint=frozenset({key}))
        result = self._torch_result(node, qualified, last, args, kwargs)
        if result.kind in (Kind.TENSOR, Kind.TENSORISH) and not result.view and \
                qualified.startswith("torch."):
            self._grad_uses(node, state, *args)
            self._record(Compute(node))
        return result

    @staticmethod
    def _torch_result(node: ast.Call, qualified: str, last: str, args: list[Value],
                      kwargs: dict[str | None, Value]) -> Value:
        if not qualified.startswith("torch."):
            return UNKNOWN
        if qualified in api.NON_TENSOR_FUNCTIONS:
            return NONTENSOR
        if qualified in api.OPAQUE_FUNCTIONS:
            return Value(Kind.UNKNOWN, src="rng")
        first = args[0] if args else UNKNOWN
        if qualified in api.VIEW_FUNCTIONS:
            return Value(Kind.TENSOR, first.roots, view=True, integral=first.integral,
                         detached=first.detached)
        if qualified in api.VIEW_SEQUENCE_FUNCTIONS:
            item = Value(Kind.TENSOR, first.roots, view=True, integral=first.integral)
            return Value(Kind.TENSORS, first.roots, None, True, item=item)
        flagged = any(kw.arg in api.TUPLE_FLAGS and not (isinstance(kw.value, ast.Constant)
                                                         and not kw.value.value)
                      for kw in node.keywords)
        if qualified in api.INDICES_PAIR_FUNCTIONS or (
                qualified in api.SEQUENCE_WITH_DIM_FUNCTIONS and _has_dim(args[1:], kwargs)):
            return values_and_indices()
        if qualified in api.SEQUENCE_FUNCTIONS or flagged:
            return Value(Kind.TENSORS, seq=True)
        if qualified in api.SEQUENCE_WITH_DIM_FUNCTIONS:
            if len(args) == 1 and not kwargs:
                return Value(Kind.TENSOR)
            return Value(Kind.TENSOR) if len(args) > 1 and args[1].kind is Kind.TENSOR else \
                Value(Kind.TENSORISH)
        if qualified == "torch.where" and len(args) == 1:
            return Value(Kind.TENSORS, seq=True)
        if api.is_tensor_class(qualified):
            return Value(Kind.TENSOR)
        if api.is_unknown_namespace(qualified):
            return UNKNOWN
        namespace = api.namespace_of(qualified)
        if namespace in api.TENSOR_NAMESPACES and last[:1].islower():
            integral = f"torch.{last}" in api.INTEGRAL_FUNCTIONS or _integral_dtype_kw(node) or \
                (last.endswith("_like") and first.integral and "dtype" not in kwargs)
            return Value(Kind.TENSOR, integral=integral)
        return UNKNOWN


def _assume(state: State, flag: str, truth: bool) -> None:
    """In a branch where `flag` is known `truth`: names bound to `a if flag
    else b` are `a` (or `b`) there."""
    for name, value in state.vars.items():
        decided = value.decided_by
        if decided is not None and decided[0] == flag:
            state.vars[name] = replace(value, roots=decided[1] if truth else decided[2])


def saved_tensors_value(layout: tuple[Value, ...] | None) -> Value:
    """`ctx.saved_tensors`: per position what forward saved, when known."""
    item = Value(Kind.TENSOR, frozenset({"saved"}), src="saved", taint=frozenset({FROM_SAVED}))
    elems = None
    if layout is not None:
        elems = tuple(
            replace(item, maybe_none=position.maybe_none or position.kind is Kind.NONE,
                    integral=position.integral,
                    taint=frozenset() if position.integral else item.taint,
                    roots=position.roots if position.roots == {OWN_SAVED} else item.roots)
            for position in layout)
    return Value(Kind.TENSORS, frozenset({"saved"}), elems, True, src="saved", item=item,
                 taint=frozenset({FROM_SAVED}))


def values_and_indices() -> Value:
    """`x.sort()`, `x.max(dim)`, `torch.topk(...)`: a (values, indices) pair."""
    return tuple_of([Value(Kind.TENSOR), Value(Kind.TENSOR, integral=True)])


_LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort",
                            "reverse"})
_INTEGRAL_OPS = frozenset({ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd,
                           ast.BitOr, ast.BitXor, ast.LShift, ast.RShift})
_FLOAT_CONVERSIONS = frozenset({"float", "double", "half", "bfloat16"})
_FLOAT_RESULTS = frozenset({"mean", "float", "double", "half", "bfloat16", "softmax",
                            "log_softmax", "sigmoid", "exp", "log", "sqrt", "rsqrt", "div",
                            "true_divide", "norm", "var", "std", "tanh"})


def _list_after(lst: Value, method: str, args: list[Value]) -> Value:
    """A list after `lst.append(v)`, `lst.extend(vs)`, `lst.sort()`, ...

    append and extend add at the end, so the positions already known stay
    known; the other methods move elements around."""
    added = frozenset().union(*(a.roots for a in args)) if args else frozenset()
    roots = lst.roots | added
    taint = lst.taint | _taint(*args)
    if method == "append" and len(args) == 1 and lst.elems is not None:
        return replace(tuple_of(lst.elems + (args[0],)), is_list=True)
    if method == "extend" and len(args) == 1 and lst.elems is not None and \
            args[0].elems is not None:
        return replace(tuple_of(lst.elems + args[0].elems), is_list=True)
    new_items = [a if method == "append" else element_of(a) for a in args]
    item = reduce(join, [element_of(lst), *new_items]) if lst.elems or lst.item else None
    if method in ("append", "extend"):
        pinned, rest = list_slots(lst)
        return replace(lst, elems=None, roots=roots, pinned=tuple(sorted(pinned.items())),
                       rest=rest | added, item=item, taint=taint)
    return replace(lst, elems=None, roots=roots, pinned=(), rest=roots, item=item, taint=taint)


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
_INTEGRAL_DTYPES = frozenset({"int8", "uint8", "int16", "short", "int32", "int", "int64",
                              "long", "bool", "uint16", "uint32", "uint64"})


def _is_constant_name(qualified: str) -> bool:
    namespace, _, last = qualified.rpartition(".")
    return namespace in ("torch", "math") and last in _DTYPE_NAMES


def _dtype_is_integral(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        node.value.id == "torch" and node.attr in _INTEGRAL_DTYPES


def _integral_dtype_kw(node: ast.Call) -> bool:
    return any(kw.arg == "dtype" and _dtype_is_integral(kw.value) for kw in node.keywords)


def _converts_to_integral(method: str, node: ast.Call) -> bool:
    """`x.to(torch.long)`, `x.to(dtype=torch.int64)`, `x.type(torch.bool)`."""
    if method not in ("to", "type"):
        return False
    return any(_dtype_is_integral(a) for a in node.args) or _integral_dtype_kw(node)


def _has_dim(args: list[Value], kwargs: dict[str | None, Value]) -> bool:
    return "dim" in kwargs or bool(args and args[0].kind is Kind.NONTENSOR)


def _slice(node: ast.Slice) -> slice | None:
    parts = []
    for part in (node.lower, node.upper, node.step):
        if part is None:
            parts.append(None)
        elif (index := constant_index(part)) is not None:
            parts.append(index)
        else:
            return None
    return slice(*parts)


def _advanced_index(node: ast.expr, value: Value) -> bool:
    """Whether an index certainly selects by tensor, mask or list (a copy)."""
    parts = value.elems if isinstance(node, ast.Tuple) and value.elems is not None else (value,)
    nodes = node.elts if isinstance(node, ast.Tuple) else [node]
    for part, part_node in zip(parts, nodes, strict=False):
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


def _literal_text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def constant_index(node: ast.expr) -> int | None:
    """The integer a subscript index literally is (`2`, `-1`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
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
