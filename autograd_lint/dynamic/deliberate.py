"""Gradients that differ from the derivative on purpose (identity and
straight-through estimators): finite differences are no verdict on them."""
from __future__ import annotations

import torch

from .inputs import Inputs, differentiable_positions
from .probing import floating_outputs, fresh
from .target import Target


def deliberate_gradient(target: Target, inputs: Inputs) -> str | None:
    """"identity" when forward returns its differentiable inputs unchanged
    (gradient reversal, scaling, clipping, injection), "piecewise-constant"
    when most elements of its floating-point outputs do not move under a
    small change of those inputs (rounding, signs, thresholds, quantization:
    straight-through estimators), else None."""
    positions = differentiable_positions(inputs.args)
    try:
        with torch.no_grad():
            args = fresh(inputs.args)
            outputs = floating_outputs(target, args)
            if not outputs or not positions:
                return None
            sources = [args[i] for i in positions]
            if all(any(o.shape == s.shape and torch.equal(o, s) for s in sources)
                   for o in outputs):
                return "identity"
            nudged = list(args)
            for i in positions:
                tensor = args[i]
                nudged[i] = tensor + _NUDGE * tensor.abs().clamp(min=1.0) * \
                    torch.rand_like(tensor)
            moved = floating_outputs(target, tuple(nudged))
    except Exception:
        return None  # the other checks say what fails
    if len(moved) != len(outputs) or any(a.shape != b.shape for a, b in zip(outputs, moved,
                                                                          strict=True)):
        return None
    total = sum(o.numel() for o in outputs)
    changed = sum(int((a != b).sum()) for a, b in zip(outputs, moved, strict=True))
    return "piecewise-constant" if total and changed < total / 2 else None


# A relative change that moves every element of a smooth function's output,
# even one computed in half precision, while most elements of a staircase
# (rounding to steps of 1/256 or coarser) stay on their step.
_NUDGE = 1e-3
