"""The walker: a method's statements in execution order, path by path.

On every path it keeps a `State`: the abstract value of each local name and
the path facts (which `save_for_backward` calls and `saved_tensors` reads
already ran, which gradients were tested against None). Branches are analysed
separately and joined afterwards (`join_states`); `return`, `raise`, `break`
and `continue` end a path; loops run to a fixpoint. Rebinding a name on one
branch therefore ends an alias on that branch only. A `with` block that turns
grad mode off marks what it computes as having left autograd.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import replace

from . import torch_api as api
from .events import CtxEscape, LeftAutograd, Mutation, Return
from .recorder import Room
from .syntax import constant_index
from .values import (
    NONE,
    NONTENSOR,
    UNKNOWN,
    Kind,
    Value,
    element_of,
    item_roots,
    join,
)

_MAX_LOOP_PASSES = 4


class State:
    """One path's state: the abstract value of each local name, and the path
    facts (per key, such as "save_for_backward" or "none_tested", the nodes or
    names met so far on this path)."""

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
    """Drop what can grow without bound across loop passes (tuple lengths);
    a container keeps what any element is, itself widened (one level)."""
    return State({k: _widened(v) for k, v in state.vars.items()}, dict(state.facts))


def _widened(value: Value, depth: int = 0) -> Value:
    item = element_of(value) if value.seq and (value.elems or value.item) else value.item
    kept = _widened(item, depth + 1) if item is not None and depth == 0 else None
    return replace(value, elems=None, literal=False, text=None, item=kept)


def assume(state: State, flag: str, truth: bool) -> None:
    """In a branch where `flag` is known `truth`: names bound to `a if flag
    else b` are `a` (or `b`) there."""
    for name, value in state.vars.items():
        decided = value.decided_by
        if decided is not None and decided[0] == flag:
            state.vars[name] = replace(value, roots=decided[1] if truth else decided[2])


_NUMBER_TYPES = frozenset({"int", "float", "bool", "complex", "str", "tuple", "list"})


def _types(node: ast.expr) -> list[ast.expr]:
    """The classes an isinstance() test names (`int` or `(int, float)`)."""
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _flag_tests(test: ast.expr) -> list[tuple[ast.expr, bool]]:
    """The parts of a branch test that decide a flag in one branch: (part,
    True) when the part holds in the body (the test itself, or a conjunct of
    `and`), (part, False) when it fails in the else branch (a disjunct of `or`)."""
    if isinstance(test, ast.BoolOp):
        in_body = isinstance(test.op, ast.And)
        return [(value, in_body) for value in test.values]
    return [(test, True)]


# How an augmented assignment's operator is written, for messages.
_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}


class StatementWalker(Room):
    """The statement handlers (`s_<node type>`), loops and branch joins."""

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
                self.evaluator.expr(child, state)
        return state

    def s_Expr(self, node: ast.Expr, state: State) -> State:
        self.evaluator.expr(node.value, state)
        return state

    def s_Assign(self, node: ast.Assign, state: State) -> State:
        value = self.evaluator.expr(node.value, state)
        for target in node.targets:
            self.binder.bind(target, value, state, node, node.value)
        return state

    def s_AnnAssign(self, node: ast.AnnAssign, state: State) -> State:
        if node.value is not None:
            value = self.evaluator.expr(node.value, state)
            self.binder.bind(node.target, value, state, node, node.value)
        return state

    def s_AugAssign(self, node: ast.AugAssign, state: State) -> State:
        target = node.target
        op = _OPERATORS.get(type(node.op), "?")
        if isinstance(target, ast.Name):
            current = state.vars.get(target.id, UNKNOWN)
            operand = self.evaluator.expr(node.value, state)
            if not (current.seq or operand.seq):  # `t += (x,)` builds a new tuple
                self.run.record(Mutation(node, target, current, f"`{target.id} {op}= ...`", False))
            self.run.grad_uses(node, state, current, operand)
            result = self.evaluator.binop(type(node.op), current, operand, node)
            state.vars[target.id] = replace(
                current, kind=result.kind, elems=result.elems, seq=result.seq, literal=False,
                text=None, taint=current.taint | result.taint | self.run.off_taint())
        elif isinstance(target, ast.Subscript):
            base = self.evaluator.expr(target.value, state)
            self.evaluator.expr(target.slice, state)
            operand = self.evaluator.expr(node.value, state)
            self.run.grad_uses(node, state, operand)
            if base.seq:
                # `grads[i] += g` on a list: the element tensor changes in place.
                element = replace(element_of(base),
                                  roots=item_roots(base, constant_index(target.slice)))
                self.run.record(Mutation(node, target, element, f"`[...] {op}= ...`", False))
            else:
                self.run.record(Mutation(node, target.value, base, f"`[...] {op}= ...`", False))
        elif isinstance(target, ast.Attribute):
            base = self.evaluator.expr(target.value, state)
            self.evaluator.expr(node.value, state)
            if target.attr == "data":
                self.run.record(Mutation(node, target.value, base, f"`.data {op}= ...`", True))
        return state

    def s_Return(self, node: ast.Return, state: State) -> None:
        value = self.evaluator.expr(node.value, state) if node.value is not None else NONE
        if self.run.grad_off:
            value = replace(value, taint=value.taint | self.run.off_taint())
        elements = list(node.value.elts) if isinstance(node.value, ast.Tuple) else None
        self.run.record(Return(node, value, elements))
        if value.src == "ctx" or any(e.src == "ctx" for e in value.elems or ()):
            self.run.record(CtxEscape(node, "returned"))
        return None

    def s_Raise(self, node: ast.Raise, state: State) -> None:
        if node.exc is not None:
            self.evaluator.expr(node.exc, state)
        return None

    def s_If(self, node: ast.If, state: State) -> State | None:
        test = self.evaluator.expr(node.test, state)
        decided = self.run.decided_truth(node.test, state)
        if decided is not None:  # a run specialized to the caller's flags
            return self.block(node.body if decided else node.orelse, state)
        body, orelse = state.copy(), state.copy()
        # `if not inplace:` knows what `x if inplace else y` is; so does each
        # conjunct of `if a and not inplace:` in the body, and each disjunct
        # of `if a or inplace:` in the else branch.
        for part, decides_body in _flag_tests(node.test):
            flag = self.caller_flag(
                part, test if part is node.test else self.evaluator.expr(part, state))
            if flag is None:
                continue
            if decides_body:
                assume(body, flag[0], not flag[1])
            if decides_body is False or part is node.test:
                assume(orelse, flag[0], flag[1])
        self._narrow(node.test, body, True)
        self._narrow(node.test, orelse, False)
        return join_states([self.block(node.body, body), self.block(node.orelse, orelse)])

    def _narrow(self, test: ast.expr, state: State, truth: bool) -> None:
        """`isinstance(x, int)` decides what `x` is in a branch: where it is
        false, a number default no longer says `x` is not a tensor; where
        `isinstance(x, torch.Tensor)` holds, `x` is one."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, truth = test.operand, not truth
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
                and test.func.id == "isinstance" and len(test.args) == 2
                and isinstance(test.args[0], ast.Name) and test.args[0].id in state.vars):
            return
        kinds = {self._type_kind(t) for t in _types(test.args[1])}
        name = test.args[0].id
        value = state.vars[name]
        if truth and kinds == {Kind.TENSOR}:
            state.vars[name] = replace(value, kind=Kind.TENSOR, literal=False, text=None,
                                       seq=False, maybe_none=False)
        elif not truth and kinds == {Kind.TENSOR}:  # whatever it is, not a tensor
            state.vars[name] = Value(Kind.NONTENSOR, src=value.src, taint=value.taint)
        elif not truth and kinds == {Kind.NONTENSOR} and value.kind is Kind.NONTENSOR:
            state.vars[name] = replace(value, kind=Kind.UNKNOWN, literal=False, text=None,
                                       seq=False)

    def _type_kind(self, node: ast.expr) -> Kind:
        if isinstance(node, ast.Name) and node.id in _NUMBER_TYPES and \
                not self.run.scope.lookup(node.id)[0]:
            return Kind.NONTENSOR
        qualified = self.run.scope.resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) \
            else None
        return Kind.TENSOR if qualified in ("torch.Tensor", "torch.nn.Parameter") \
            else Kind.UNKNOWN

    def s_Assert(self, node: ast.Assert, state: State) -> State:
        self.evaluator.expr(node.test, state)
        return state

    def s_For(self, node: ast.For, state: State) -> State | None:
        iterable = self.evaluator.expr(node.iter, state)
        return self._loop(node, state, lambda s: self.binder.bind(
            node.target, element_of(iterable), s, node, None), infinite=False)

    s_AsyncFor = s_For

    def s_While(self, node: ast.While, state: State) -> State | None:
        infinite = isinstance(node.test, ast.Constant) and bool(node.test.value)
        return self._loop(node, state, lambda s: self.evaluator.expr(node.test, s),
                          infinite=infinite)

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, state: State,
              enter: Callable[[State], object], infinite: bool) -> State | None:
        head = state
        breaks: list[State] = []
        for attempt in range(_MAX_LOOP_PASSES + 1):
            self.run.loops.append(([], []))
            body_in = head.copy()
            enter(body_in)
            out = self.block(node.body, body_in)
            breaks, continues = self.run.loops.pop()
            new_head = join_states([head, out, *continues])
            assert new_head is not None
            if new_head == head:
                break
            head = _widen(new_head) if attempt >= _MAX_LOOP_PASSES - 1 else new_head
        exit_state = None if infinite else self.block(node.orelse, head.copy())
        return join_states([exit_state, *breaks])

    def s_Break(self, node: ast.Break, state: State) -> None:
        if self.run.loops:
            self.run.loops[-1][0].append(state)
        return None

    def s_Continue(self, node: ast.Continue, state: State) -> None:
        if self.run.loops:
            self.run.loops[-1][1].append(state)
        return None

    def s_With(self, node: ast.With, state: State) -> State | None:
        grad_off: ast.expr | None = None  # the context that turns grad mode off
        for item in node.items:
            self.evaluator.expr(item.context_expr, state)
            if grad_off is None and self._is_grad_off(item.context_expr, state):
                grad_off = item.context_expr
            if item.optional_vars is not None:
                self.binder.bind(item.optional_vars, UNKNOWN, state, node, None)
        if grad_off is None:
            return self.block(node.body, state)
        key = self.run.marker("left", node)
        self.run.record(LeftAutograd(node, f"a `{ast.unparse(grad_off)}` block", key, None))
        self.run.grad_off.append(key)
        try:
            return self.block(node.body, state)
        finally:
            self.run.grad_off.pop()

    s_AsyncWith = s_With

    def _is_grad_off(self, expr: ast.expr, state: State) -> bool:
        call = expr if isinstance(expr, ast.Call) else None
        target = call.func if call is not None else expr
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return False
        qualified = self.evaluator.qualname(target, state) or ""
        if qualified in api.GRAD_OFF_CONTEXTS:
            return True
        if qualified in api.GRAD_MODE_SETTERS and call is not None and call.args:
            first = call.args[0]
            return isinstance(first, ast.Constant) and first.value is False
        return False

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
        self.evaluator.expr(node.subject, state)
        outs: list[State | None] = [state.copy()]
        for case in node.cases:
            entry = state.copy()
            for sub in ast.walk(case.pattern):
                name = getattr(sub, "name", None)
                if isinstance(name, str):
                    entry.vars[name] = UNKNOWN
            if case.guard is not None:
                self.evaluator.expr(case.guard, entry)
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
                self.evaluator.expr(target, state)
        return state

    def s_Import(self, node: ast.Import | ast.ImportFrom, state: State) -> State:
        for alias in node.names:
            name = alias.asname or alias.name.split(".", 1)[0]
            state.vars.pop(name, None)  # resolved through self.run.scope from now on
        return state

    s_ImportFrom = s_Import

    def s_Global(self, node: ast.Global | ast.Nonlocal, state: State) -> State:
        self.run.globals_declared.update(node.names)
        for name in node.names:
            state.vars.pop(name, None)
        return state

    s_Nonlocal = s_Global

    def s_Pass(self, node: ast.stmt, state: State) -> State:
        return state

    def caller_flag(self, test: ast.expr, value: Value) -> tuple[str, bool] | None:
        """(the flag's text, negated) for a test on a flag the caller chooses:
        a parameter or ctx attribute (or its negation) that is not a tensor."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        flag = test.operand if negated else test  # type: ignore[attr-defined]
        if value.kind.holds_tensor:
            return None
        suffix = ""
        if isinstance(flag, ast.Compare) and len(flag.ops) == 1 and \
                isinstance(flag.ops[0], (ast.Is, ast.IsNot)) and \
                isinstance(flag.comparators[0], ast.Constant) and \
                flag.comparators[0].value is None:
            # `valid is None` / `valid is not None`: an optional the caller gives or not.
            negated ^= isinstance(flag.ops[0], ast.IsNot)
            flag, suffix = flag.left, " is None"
        if isinstance(flag, ast.Name) and flag.id in self.run.parameters or \
                isinstance(flag, ast.Attribute) and isinstance(flag.value, ast.Name) and \
                self.run.initial.get(flag.value.id, UNKNOWN).src == "ctx":
            return ast.unparse(flag) + suffix, negated
        return None
