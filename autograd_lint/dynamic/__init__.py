"""Dynamic mode: run each Function and check its gradients (`check --dynamic`).

Declaring example inputs next to a Function (used instead of synthesized ones):

    from autograd_lint.dynamic import example_inputs

    @example_inputs(lambda: (torch.randn(3, 4), 2))          # one or more factories
    class Scale(torch.autograd.Function):
        ...

or, without importing autograd-lint in your code, a staticmethod:

    class Scale(torch.autograd.Function):
        @staticmethod
        def gradcheck_inputs():
            return [(torch.randn(3, 4), 2), (torch.randn(5), 3)]   # a tuple or a list of tuples

Each example is the positional arguments of `Scale.apply`. Floating tensors
are converted to float64 (complex to complex128), moved to the checked device
and made to require grad; other values are passed as they are.

A Function that only computes in bfloat16/float16 (where finite differences
say nothing) is checked against a reference implementation in float64: a
`reference` staticmethod taking forward's inputs, or

    @example_inputs(lambda: (torch.randn(8, 64),), reference=lambda x: x.relu() * 3)

This package imports no torch: the decorator only records the factories. The
checks run in child processes (`worker.py`); `runner.py` drives them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

EXAMPLES_ATTRIBUTE = "__autograd_lint_examples__"
REFERENCE_ATTRIBUTE = "__autograd_lint_reference__"

T = TypeVar("T")


def example_inputs(*factories: Callable[[], Any] | tuple[Any, ...],
                   reference: Callable[..., Any] | None = None) -> Callable[[T], T]:
    """Class decorator: example arguments for `Function.apply`, each a tuple or a
    function returning one (a function builds fresh tensors on every call);
    `reference`: what forward computes, in plain differentiable torch."""
    if not factories:
        raise TypeError("example_inputs() needs at least one example")

    def decorate(cls: T) -> T:
        setattr(cls, EXAMPLES_ATTRIBUTE, tuple(factories))
        if reference is not None:
            setattr(cls, REFERENCE_ATTRIBUTE, staticmethod(reference))
        return cls

    return decorate
