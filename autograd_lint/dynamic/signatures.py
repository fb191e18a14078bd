"""forward as the Function wrote it, and its parameters as `apply` takes
them: through a decorator that wraps it without `functools.wraps`, and with
`ctx` dropped for a ctx-style forward. Runs in the worker (imports torch)."""
from __future__ import annotations

import inspect
from typing import Any

import torch


def forward_of(cls: type) -> Any:
    """The Function's forward as written: through a decorator that wraps it
    without `functools.wraps` (`@ensure_contiguous` taking `*args, **kwargs`),
    the function its closure holds."""
    function = cls.forward
    for _ in range(4):
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return function
        if not parameters or any(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                 for p in parameters):
            return function
        inner = [cell.cell_contents for cell in getattr(function, "__closure__", None) or ()
                 if inspect.isfunction(_cell_value(cell))]
        if len(inner) != 1:
            return function
        function = inner[0]
    return function


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def forward_parameters(cls: type) -> list[inspect.Parameter] | None:
    """forward's parameters as `apply` takes them (ctx dropped for ctx-style)."""
    try:
        parameters = list(inspect.signature(forward_of(cls)).parameters.values())
    except (TypeError, ValueError):
        return None
    if not uses_setup_context(cls) and parameters:
        parameters = parameters[1:]
    return parameters


def uses_setup_context(cls: type) -> bool:
    base = torch.autograd.function._SingleLevelFunction
    for klass in cls.__mro__:
        if klass is base or klass is torch.autograd.Function:
            return False
        if "setup_context" in vars(klass):
            return True
    return False
