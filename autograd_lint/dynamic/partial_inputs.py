"""Calls with some inputs left out: optional inputs left as None (AGD012),
and one differentiable input at a time (AGD013)."""
from __future__ import annotations

import re

import torch
from torch.autograd.gradcheck import GradcheckError

from .errors import first_line
from .gradcheck import run_gradcheck
from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, fresh
from .target import Target

# An error that is about a None: what leaving an optional input None causes
# whatever the other inputs are ("unsupported operand type(s) for +: 'Tensor'
# and 'NoneType'", "'NoneType' object has no attribute 'shape'").
_NAMES_NONE = re.compile(r"\bNone(?:Type)?\b")


def check_optional_none(target: Target, inputs: Inputs) -> None:
    """AGD012: inputs that default to None, left as None. The call succeeds
    with them given, so with the project's own inputs any error is the
    None's; with synthesized ones only an error about a None is (a shape
    mismatch may be between guesses that the given input hid)."""
    if not inputs.none_defaults:
        return
    args = list(fresh(inputs.args))
    for index in inputs.none_defaults:
        args[index] = None
    names = ", ".join(f"`{inputs.name(i)}`" for i in inputs.none_defaults)
    failed = _failure(target, args)
    if failed is not None:
        _report_none(target, inputs, names, *failed)


def _failure(target: Target, args: list) -> tuple[str, Exception] | None:
    """Where forward and a unit backward on `args` fail, and how; None when
    both work."""
    try:
        output = target.apply(*args)
    except Exception as exc:
        return "forward", exc
    outputs = differentiable_outputs(output)
    wanted = [args[i] for i in differentiable_positions(tuple(args))]
    if outputs and wanted:
        try:
            torch.autograd.grad(outputs, wanted, [torch.ones_like(o) for o in outputs],
                                allow_unused=True)
        except Exception as exc:
            return "backward", exc
    return None


def _report_none(target: Target, inputs: Inputs, names: str, where: str,
                 exc: Exception) -> None:
    detail = first_line(exc)
    if inputs.trusted or (_NAMES_NONE.search(detail) and
                          not _another_guess_avoids(target, inputs)):
        target.report("AGD012", names=names, where=where, detail=detail)


# Other guesses of the synthesized values (their signs flipped; centred on
# zero): a precondition on values that holds only on the None path ("xk
# must be all negative when decay is None") is the guess's, not the None's.
_OTHER_VALUES = (lambda t: -t, lambda t: t - 1.0)


def _another_guess_avoids(target: Target, inputs: Inputs) -> bool:
    """Whether, with the optional inputs left None, forward and backward work
    once the other floating inputs take other values."""
    for change in _OTHER_VALUES:
        args = list(fresh(inputs.args))
        for index, value in enumerate(args):
            if index in inputs.none_defaults:
                args[index] = None
            elif isinstance(value, torch.Tensor) and value.is_floating_point():
                args[index] = change(value.detach()).requires_grad_(value.requires_grad)
        if _failure(target, args) is None:
            return True
    return False


def check_partial_requires_grad(target: Target, inputs: Inputs) -> None:
    """AGD013: one differentiable input at a time."""
    positions = differentiable_positions(inputs.args)
    if len(positions) < 2:
        return
    for index in positions:
        try:
            run_gradcheck(target, fresh(inputs.args, requires={index}))
        except GradcheckError:
            target.report("AGD013", index=index, name=inputs.name(index),
                          detail="gradcheck disagrees")
            return
        except Exception as exc:
            target.report("AGD013", index=index, name=inputs.name(index),
                          detail=f"backward raises {first_line(exc)}")
            return
