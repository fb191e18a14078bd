"""The dynamic checks of one Function (AGD001-AGD015). Runs in the worker.

In order: choose inputs (recorded calls, declared examples, synthesis:
`input_choice.py`), find the precision the Function computes in (the ladder
in `precision.py`), leave out the inputs backward returns None for on purpose
(AGD015 says whether the outputs depend on them: `none_gradients.py`), then
run the checks, each at that precision. A synthesized bool flag is then
flipped and the checks run again on that path.

Each check returns findings as plain dicts (`code` plus the message fields of
the rule); a check whose own machinery fails reports nothing (precision
first), and a check that needs a working backward runs only when the basic
gradcheck passed, so one bug is reported once, by the most specific rule.
Which finding a failed probe becomes is decided in `verdicts.py`.

This module composes the probes, one module per family:

    forward_backward.py    AGD003-AGD007: one backward, its errors and side effects
    gradcheck.py           AGD001 (gradcheck), AGD010 (undefined incoming gradients)
    second_derivatives.py  AGD002 (gradgradcheck)
    mutation.py            AGD011 (inputs changed in place)
    partial_inputs.py      AGD012 (optional inputs left None), AGD013 (one input at a time)
    grad_layouts.py        AGD014 (non-contiguous or expanded incoming gradients)
    transforms.py          AGD008 (forward AD), AGD009 (vmap)
    deliberate.py          gradients that differ from the derivative on purpose
    reference.py           AGD001 in half precision, against a declared reference
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .deliberate import deliberate_gradient
from .errors import CodeError, NotChecked, first_line
from .forward_backward import check_forward_backward
from .grad_layouts import check_noncontiguous_grad_output
from .gradcheck import check_gradcheck, check_undefined_grad
from .input_choice import choose_inputs, forward_error
from .inputs import Inputs, differentiable_positions, short
from .mutation import check_input_mutation
from .none_gradients import freeze_none_gradients
from .partial_inputs import check_optional_none, check_partial_requires_grad
from .precision import (
    FLOAT64,
    HALF,
    LADDER,
    SLOW_FORWARD_SECONDS,
    Precision,
    float32,
    settle_precision,
)
from .probing import differentiable_outputs, fresh, tensors_of
from .reference import check_against_reference, reference_of
from .second_derivatives import check_gradgradcheck
from .target import Finding, Target
from .transforms import check_forward_ad, check_vmap

MAX_FLAG_PASSES = 3


def run_all(target: Target, calls: Iterable[dict[str, Any]] = ()) -> Inputs | None:
    """Every check; returns the inputs used (None: the code failed first)."""
    try:
        inputs = choose_inputs(target, calls)
        inputs = settle_precision(target, inputs)
    except CodeError as exc:
        target.report("AGD003", where=exc.where, detail=exc.detail)
        return None
    if target.precision.name in HALF.values():
        check_against_reference(target, inputs)
        return inputs
    check_inputs(target, inputs)
    if inputs.source == "synthesized":
        for index in inputs.flags[:MAX_FLAG_PASSES]:
            value = inputs.args[index]
            if not isinstance(value, bool):
                continue
            flipped = inputs.with_arg(index, not value)
            if forward_error(target, flipped) is not None:
                continue
            target.note = f"with `{inputs.name(index)}={not value}`"
            try:
                check_inputs(target, flipped)
            except NotChecked:
                pass
            finally:
                target.note = ""
    return inputs


def check_inputs(target: Target, inputs: Inputs) -> None:
    """Every check on one set of inputs."""
    inputs = freeze_none_gradients(target, inputs)
    if not differentiable_positions(inputs.args):
        raise NotChecked("no floating-point tensor input whose gradient backward computes")
    check_input_mutation(target, inputs)
    backward_ok = check_forward_backward(target, inputs)
    if backward_ok:
        # Finite differences are no verdict on a gradient that differs from
        # the derivative on purpose (RULES.md): the probes that compare with
        # them are left out; the others still run.
        deliberate = deliberate_gradient(target, inputs)
        if deliberate is not None:
            target.deliberate = deliberate
        gradcheck_ok = deliberate is None and check_gradcheck(target, inputs)
        if deliberate is not None:
            check_noncontiguous_grad_output(target, inputs)
        if gradcheck_ok:
            if not target.once_differentiable:
                check_gradgradcheck(target, inputs)
            check_undefined_grad(target, inputs)
            check_partial_requires_grad(target, inputs)
            check_noncontiguous_grad_output(target, inputs)
        check_optional_none(target, inputs)
    if target.has_jvp:
        check_forward_ad(target, inputs)
    if target.has_vmap:
        check_vmap(target, inputs)


# What this module held before the probes had modules of their own, still
# importable from here.
__all__ = [
    "FLOAT64", "HALF", "LADDER", "MAX_FLAG_PASSES", "SLOW_FORWARD_SECONDS", "CodeError",
    "Finding", "NotChecked", "Precision", "Target", "check_against_reference",
    "check_forward_ad", "check_forward_backward", "check_gradcheck", "check_gradgradcheck",
    "check_input_mutation", "check_inputs", "check_noncontiguous_grad_output",
    "check_optional_none", "check_partial_requires_grad", "check_undefined_grad", "check_vmap",
    "choose_inputs", "deliberate_gradient", "differentiable_outputs", "first_line", "float32",
    "freeze_none_gradients", "fresh", "reference_of", "run_all", "settle_precision", "short",
    "tensors_of",
]
