"""Triton kernels launched from a Function: AGF216.

The analysis finds the launches (analysis/kernel_gradients.py: the gradient
as autograd handed it, a kernel that indexes it by shape); the rule words them.
"""
from __future__ import annotations

from autograd_lint.analysis.function_facts import FunctionFacts
from autograd_lint.analysis.kernel_gradients import GradientLaunch, shape_indexed_launches
from autograd_lint.core.project import FunctionClass

from .base import Checker, source_text


class KernelsChecker(Checker):
    family = "kernels"

    def check_function(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        self.agf216_grad_to_contiguous_kernel(fn, facts)

    # -- AGF216 ----------------------------------------------------------------
    def agf216_grad_to_contiguous_kernel(self, fn: FunctionClass, facts: FunctionFacts) -> None:
        if not self.enabled("AGF216"):
            return
        for launch in shape_indexed_launches(facts):
            self.reporter.add("AGF216", launch.argument, function=fn.name,
                              arg=source_text(launch.argument), via=_via(launch),
                              kernel=launch.kernel, param=launch.parameter)


def _via(launch: GradientLaunch) -> str:
    """How the argument comes from the gradient, for the message: nothing
    when it is the gradient as written."""
    gradient = launch.gradient
    if not gradient.via:
        return "" if source_text(launch.argument) == gradient.text else f" `{gradient.text}`"
    return f" `{gradient.text}` through `{''.join(gradient.via)}`"
