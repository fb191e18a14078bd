"""Callees' summaries at their call sites: a helper the project defines (or a
Triton kernel it launches) is summarized once (effects.py); here the summary
meets the arguments one call passes. The callee's in-place changes of its
parameters become changes of those arguments, a result that aliases its
parameters aliases the arguments, and a parameter whose value leaves autograd
inside the callee makes the gradient passed there leave it too.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .events import LeftAutograd, Mutation
from .markers import carries_gradient, is_gradient, param_names
from .recorder import Room
from .values import Kind, Value

if TYPE_CHECKING:
    from .summaries import Summary
    from .walker import State


def bind_arguments(node: ast.Call, summary: Summary, args: list[Value],
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


class CalleeEffects(Room):
    """Applies a callee's summary (effects.py) where it is called."""

    def left_in_callee(self, node: ast.Call, summary: Summary,
                        bound: dict[str, tuple[ast.expr, Value]]) -> frozenset[str]:
        """A helper whose result left autograd on a parameter (`.item()`, a
        no_grad block): an event here when the gradient (or a saved tensor) is
        what the call passes there."""
        key = self.run.marker("left", node)
        fired = False
        for leave in summary.leaves:
            if leave.name not in bound:
                continue
            value = bound[leave.name][1]
            carries = is_gradient(value) if leave.on_gradient else carries_gradient(value)
            if carries:
                params = param_names(value.roots if leave.on_gradient else value.taint)
                self.run.record(LeftAutograd(node, f"{leave.how} inside `{summary.callee}()`", key,
                                          params, leave.on_gradient))
                fired = True
        return frozenset({key}) if fired else frozenset()

    @staticmethod
    def aliased_result(summary: Summary,
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

    def callee_summary(self, node: ast.Call, state: State) -> Summary | None:
        """The summary of a helper or kernel launched here (effects.py), if any."""
        if isinstance(node.func, ast.Subscript):
            root = node.func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not isinstance(root, ast.Name) or root.id in state.vars:
                return None  # a local: `fns[i](x)`, `kernels[k][grid](...)` stay opaque
        assert self.run.effects is not None
        return self.run.effects.at_call(node, self.run.scope, self.run.module,
                                    self.run.decided_arguments(node, state))

    def callee_writes(self, node: ast.Call, summary: Summary,
                       bound: dict[str, tuple[ast.expr, Value]]) -> None:
        """The arguments the callee changes in place, as changes here."""
        for write in summary.writes:
            if write.name not in bound:
                continue
            target, value = bound[write.name]
            if not write.certain and (value.seq or value.kind in (Kind.TENSORS, Kind.TENSORISH)):
                # `d[key] = v` in the helper stores into a container's slot:
                # no tensor the container holds changes (RULES.md, "Must, not may").
                continue
            if summary.kernel:
                how = (f"`{summary.callee}[...]()` launch (the kernel stores into its "
                       f"`{write.name}`)")
            elif write.collective:
                how = f"`{summary.callee}()` call (a collective on its `{write.name}`)"
            else:
                how = f"`{summary.callee}()` call (it changes its `{write.name}` in place)"
            self.run.record(Mutation(node, target, value, how, write.certain,
                                  collective=write.collective))
