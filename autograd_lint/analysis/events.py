"""What the interpreter records: one event per fact a rule may judge (a ctx
attribute store, a ctx method call, an in-place change, a return, a value
leaving autograd, ...) with the abstract values involved, and the facts of a
whole method (`MethodFacts`). The interpreter judges nothing: the checkers
decide what is a finding.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .values import Value

# The ctx methods a CtxCall records, and the attributes a CtxRead reads.
CTX_SAVE_METHODS = frozenset({
    "save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
})
CTX_OTHER_METHODS = frozenset({"set_materialize_grads", "mark_shared_storage"})
SAVED_ATTRS = frozenset({"saved_tensors", "saved_variables"})


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
    # An in-place torch.distributed collective (`all_reduce`), here or in a
    # helper on every path that writes: by design in tensor-parallel regions.
    collective: bool = False


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


def event_position(event: Event) -> tuple[int, int]:
    node = event.node
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
