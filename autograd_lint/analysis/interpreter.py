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

It is composed of rooms, one per concern, over a shared base (recorder.py:
the method, its scope, the record of events and evidence):

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
from .syntax import constant_index, own_nodes
from .walker import State, StatementWalker, join_states

# What other modules (checkers, FunctionFacts, effect summaries) import from here.
__all__ = [
    "CTX_OTHER_METHODS", "CTX_SAVE_METHODS", "EVIDENCE_METHODS", "FROM_GRAD", "FROM_SAVED",
    "OWN_SAVED", "SAVED_ATTRS", "BackwardCall", "Compute", "CtxCall", "CtxEscape", "CtxRead",
    "CtxStore", "DataAccess", "Event", "GradRead", "GradUse", "Interpreter", "LeftAutograd",
    "MethodFacts", "Mutation", "Return", "State", "constant_index", "join_states", "own_nodes",
    "saved_tensors_value", "values_and_indices",
]


class Interpreter(StatementWalker, Binder, ExpressionEvaluator, CallInterpreter, CalleeEffects):
    """Runs over one method body; see the module docstring. Constructed with
    the method, its scope and its parameters' values (`Recorder.__init__`)."""

    def run(self) -> MethodFacts:
        state = State(dict(self.initial))
        end = self.block(self.node.body, state)
        events = sorted(self._events.values(), key=event_position)
        has_yield = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(self.node))
        return MethodFacts(events, self.evidence, end is not None, has_yield)
