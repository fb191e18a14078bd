"""Inputs backward returns None for: left out of the other checks when on
purpose, AGD015 when the outputs depend on them."""
from __future__ import annotations

import torch

from .inputs import RECORDED, Inputs
from .parameter_names import tensor_role
from .probing import floating_outputs, fresh, unit_backward
from .target import Target


def freeze_none_gradients(target: Target, inputs: Inputs) -> Inputs:
    """Inputs backward returns None for on purpose (loss targets, cos/sin
    tables) stop requiring grad, as torch's own tests leave them, so that the
    others are still checked; AGD015 when the outputs depend on them."""
    try:
        outputs, positions, grads = unit_backward(target, fresh(inputs.args))
    except Exception:
        return inputs  # check_forward_backward reports it
    none = [index for index, grad in zip(positions, grads, strict=True) if grad is None]
    if not none:
        return inputs
    frozen = inputs
    for index in none:
        tensor = inputs.args[index]
        frozen = frozen.with_arg(index, tensor.detach().requires_grad_(False))
    losses = bool(outputs) and all(o.numel() == 1 for o in outputs)
    for index in none:
        if inputs.args[index].is_floating_point() and \
                _meant_to_be_trained(inputs, index, positions, losses):
            _check_dependence(target, frozen, index)
    return frozen


def _meant_to_be_trained(inputs: Inputs, index: int, positions: list[int],
                         losses: bool) -> bool:
    """Whether a None gradient for this input can be a mistake. A recorded
    call says so (the project passed it requiring grad); otherwise loss
    targets, labels, masks and cos/sin tables are None by design, as are the
    later inputs of a Function whose outputs are scalar losses."""
    if inputs.source == RECORDED:
        return True
    role = tensor_role(inputs.name(index))
    if role in ("target", "labels", "mask", "table", "index"):
        return False
    return not (losses and role == "main" and index != positions[0])


def _check_dependence(target: Target, inputs: Inputs, index: int) -> None:
    """AGD015: do the outputs move when this input moves?"""
    args = list(fresh(inputs.args, requires=set()))
    base = args[index]
    generator = torch.Generator(device="cpu").manual_seed(23)
    direction = torch.randn(base.shape, dtype=torch.float64, generator=generator).to(
        base.device, base.dtype)
    step = target.precision.eps * 10
    try:
        args[index] = base + step * direction
        up = floating_outputs(target, args)
        args[index] = base - step * direction
        down = floating_outputs(target, args)
    except Exception:
        return
    sensitivity = max(((u.double() - d.double()).abs().max().item() / (2 * step)
                       for u, d in zip(up, down, strict=False)
                       if u.shape == d.shape and u.numel()),
                      default=0.0)
    if not sensitivity < 1e12:
        return  # the perturbation overflowed (an exponential of a log-gate): no measure
    if sensitivity > 100 * target.precision.atol:
        target.report("AGD015", index=index, name=inputs.name(index),
                      detail=f"finite differences move them by {sensitivity:.3g} per unit")
