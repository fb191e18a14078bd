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

It is composed of rooms, one per concern, each given the one state of the
run (recorder.py's `Recorder`: the method, its scope, the record of events
and evidence) and the other rooms it asks:

- walker.py: statements, branches, loops, joins of paths and path facts;
- binding.py: assignments to names, tuples, attributes and subscripts;
- expressions.py: the value of every expression but a call;
- calls.py: calls of torch's API, tensor methods, builtins and ctx methods;
- callees.py: summaries of the project's helpers and Triton kernels
  (effects.py) applied where they are called.

What it records is in events.py; the markers values carry in markers.py.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..core.model import FunctionNode, ModuleInfo, Scope
from .binding import Binder
from .callees import CalleeEffects
from .calls import EVIDENCE_METHODS, CallInterpreter, values_and_indices
from .events import (
    CTX_OTHER_METHODS,
    CTX_SAVE_METHODS,
    SAVED_ATTRS,
    BackwardCall,
    Compute,
    CtxCall,
    CtxEscape,
    CtxRead,
    CtxStore,
    DataAccess,
    Event,
    GradRead,
    GradUse,
    LeftAutograd,
    MethodFacts,
    Mutation,
    Return,
    event_position,
)
from .expressions import ExpressionEvaluator, saved_tensors_value
from .markers import FROM_GRAD, FROM_SAVED, OWN_SAVED
from .recorder import Recorder
from .syntax import constant_index, own_nodes
from .values import Value
from .walker import State, StatementWalker, join_states

if TYPE_CHECKING:
    from .effects import Effects

# What other modules (checkers, FunctionFacts, effect summaries) import from here.
__all__ = [
    "CTX_OTHER_METHODS", "CTX_SAVE_METHODS", "EVIDENCE_METHODS", "FROM_GRAD", "FROM_SAVED",
    "OWN_SAVED", "SAVED_ATTRS", "BackwardCall", "Compute", "CtxCall", "CtxEscape", "CtxRead",
    "CtxStore", "DataAccess", "Event", "GradRead", "GradUse", "Interpreter", "LeftAutograd",
    "MethodFacts", "Mutation", "Return", "State", "constant_index", "join_states", "own_nodes",
    "saved_tensors_value", "values_and_indices",
]


class Interpreter:
    """Runs over one method body; see the module docstring. One `Recorder`
    (recorder.py: the method, its scope, its parameters' values and the
    record of the run) is the state every room is given."""

    def __init__(self, module: ModuleInfo, scope: Scope, node: FunctionNode,
                 initial: dict[str, Value], saved_layout: tuple[Value, ...] | None = None,
                 effects: Effects | None = None, decided: dict[str, object] | None = None
                 ) -> None:
        self.state = Recorder(module, scope, node, initial, saved_layout, effects, decided)
        rooms = (StatementWalker(self.state), Binder(self.state),
                 ExpressionEvaluator(self.state), CallInterpreter(self.state),
                 CalleeEffects(self.state))
        for room in rooms:
            room.walker, room.binder, room.evaluator, room.calls, room.callees = rooms
        self.walker = rooms[0]

    def run(self) -> MethodFacts:
        run = self.state
        state = State(dict(run.initial))
        end = self.walker.block(run.node.body, state)
        events = sorted(run.events.values(), key=event_position)
        has_yield = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(run.node))
        return MethodFacts(events, run.evidence, end is not None, has_yield)
