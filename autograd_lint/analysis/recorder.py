"""The one state every room of the interpreter works on, and the rooms' base.

`Recorder` is the state of a run over a method body: the method, its scope,
the callees' summaries, the enclosing loops and no_grad blocks, and the record
of the run (its events and the inputs found used as tensors). `Interpreter`
(interpreter.py) makes one and passes it to each room: the walker
(walker.py), binding (binding.py), expressions (expressions.py), calls
(calls.py) and callees' summaries at call sites (callees.py). A room reads
and records through `self.run` and asks another room by name
(`self.evaluator.expr(...)`), never through attributes of its own that
another room set.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..core.model import ModuleInfo, Scope, collect_imports
from .events import CtxStore, Event, GradUse, Mutation
from .guards import Symbol, evaluate
from .values import Value

UNDECIDED = object()  # a value a specialized run does not know
_NO_VALUE = Value()

if TYPE_CHECKING:
    from .binding import Binder
    from .callees import CalleeEffects
    from .calls import CallInterpreter
    from .effects import Effects
    from .expressions import ExpressionEvaluator
    from .walker import State, StatementWalker


class Recorder:
    """The state of one run over a method body and what it records."""

    def __init__(self, module: ModuleInfo, scope: Scope,
                 node: ast.FunctionDef | ast.AsyncFunctionDef, initial: dict[str, Value],
                 saved_layout: tuple[Value, ...] | None = None,
                 effects: Effects | None = None,
                 decided: dict[str, object] | None = None) -> None:
        self.scope = Scope(scope, "function", "")
        # A run specialized to the caller's flags (opt_in.py): the values of
        # parameters (`"inplace"`) and ctx attributes (`"ctx.inplace"`) that
        # decide branches and callees' branches. None: a run for every caller.
        self.decided = decided
        collect_imports(node.body, self.scope, module)
        self.module = module
        self.effects = effects  # callees' summaries (effects.py); None: all opaque
        self.node = node
        self.initial = initial
        self.saved_layout = saved_layout
        self.events: dict[tuple[type, int, object], Event] = {}
        self.evidence: set[str] = set()
        self.loops: list[tuple[list[State], list[State]]] = []
        self.grad_off: list[str] = []  # taint keys of enclosing no_grad blocks
        self.globals_declared: set[str] = set()
        args = node.args
        self.parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}

    def record(self, event: Event) -> None:
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
        self.events[(type(event), id(event.node), detail)] = event

    def marker(self, prefix: str, node: ast.AST) -> str:
        return f"{prefix}:{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0)}"

    def add_evidence(self, value: Value) -> None:
        if value.src and value.src.startswith("input:"):
            self.evidence.add(value.src[6:])

    def tensor_arguments(self, where: tuple[int | str, ...], args: list[Value],
                          kwargs: dict[str | None, Value]) -> None:
        """Evidence from arguments in positions that only take tensors."""
        for place in where:
            value = args[place] if isinstance(place, int) and place < len(args) else \
                kwargs.get(place) if isinstance(place, str) else None
            if value is not None:
                self.add_evidence(value)

    def grad_uses(self, node: ast.AST, state: State, *values: Value) -> None:
        """Record gradient arguments used as tensors by this operation."""
        tested = state.facts.get("none_tested", frozenset())
        for value in values:
            for root in value.roots:
                if root.startswith("grad:"):
                    name = root[5:]
                    self.record(GradUse(node, name, name in tested))

    def off_taint(self) -> frozenset[str]:
        return frozenset(self.grad_off)

    def decided_value(self, node: ast.expr, state: State) -> object:
        """In a specialized run, the decided value a parameter (not rebound
        since) or a ctx attribute holds; `UNDECIDED` otherwise."""
        if self.decided is None:
            return UNDECIDED
        if isinstance(node, ast.Name):
            held = state.vars.get(node.id)
            if held is not None and (held.src or "").startswith("decided:"):
                return self.decided.get(held.src[8:], UNDECIDED)  # `flag = ctx.flag`
            if node.id in self.decided and held == self.initial.get(node.id):
                return self.decided[node.id]
            return UNDECIDED
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                self.initial.get(node.value.id, _NO_VALUE).src == "ctx":
            return self.decided.get(f"ctx.{node.attr}", UNDECIDED)
        return UNDECIDED

    def decided_truth(self, test: ast.expr, state: State) -> bool | None:
        """Whether a branch test holds in a specialized run (None: unknown)."""
        if self.decided is None:
            return None
        binding: dict[str, object] = {}
        for node in ast.walk(test):
            value = self.decided_value(node, state)  # type: ignore[arg-type]
            if value is UNDECIDED:
                value = self.constant_symbol(node, state)
            if value is UNDECIDED:
                continue
            key = node.id if isinstance(node, ast.Name) else \
                f"{node.value.id}.{node.attr}"  # type: ignore[attr-defined]
            binding[key] = value
        return evaluate(test, binding) if binding else None

    def constant_symbol(self, node: ast.AST, state: State) -> object:
        """`Mode.FAST` (a module-level name's attribute, not a local's): the
        constant it names, as a Symbol a flag's default can equal."""
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)) or \
                node.value.id in state.vars:
            return UNDECIDED
        qualified = self.scope.resolve(node)
        return Symbol(qualified) if qualified is not None else UNDECIDED

    def decided_arguments(self, call: ast.Call, state: State) -> dict[int, object] | None:
        """The arguments of a call whose values a specialized run decided."""
        if self.decided is None:
            return None
        known = {}
        for argument in (*call.args, *(k.value for k in call.keywords)):
            value = self.decided_value(argument, state)
            if value is not UNDECIDED:
                known[id(argument)] = value
        return known or None


class Room:
    """A room of the interpreter: the run's state it works on (`run`, the one
    `Recorder` of the run) and the other rooms it asks, each by its concern
    (set by `Interpreter` once all are made)."""

    walker: StatementWalker
    binder: Binder
    evaluator: ExpressionEvaluator
    calls: CallInterpreter
    callees: CalleeEffects

    def __init__(self, run: Recorder) -> None:
        self.run = run
