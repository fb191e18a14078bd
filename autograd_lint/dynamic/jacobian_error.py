"""Where a failed gradcheck is wrong: which input's Jacobian is furthest
from finite differences, and by how much (the detail of AGD001)."""
from __future__ import annotations

from typing import Any

import torch

from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, floating_outputs, fresh, tensors_of
from .target import Target


def worst_error(target: Target, inputs: Inputs) -> str:
    """Which input's Jacobian is furthest from finite differences, and by how much."""
    if target.fast:
        return _worst_projected_error(target, inputs)
    args = fresh(inputs.args)
    eps = target.precision.eps
    worst: tuple[float, int] | None = None
    for index in differentiable_positions(args):
        x = args[index]
        if x.numel() > 64 or x.is_complex():
            continue

        def of_input(value: torch.Tensor, index: int = index) -> torch.Tensor:
            call = list(fresh(args, requires=set()))
            call[index] = value
            outs = differentiable_outputs(target.apply(*call)) or tensors_of(
                target.apply(*call))
            return torch.cat([o.reshape(-1).double() for o in outs])

        try:
            analytical = torch.autograd.functional.jacobian(of_input, x.detach().clone())
            numerical = torch.zeros_like(analytical)
            flat = x.detach().clone().reshape(-1)
            with torch.no_grad():
                for k in range(flat.numel()):
                    up, down = flat.clone(), flat.clone()
                    up[k] += eps
                    down[k] -= eps
                    column = (of_input(up.reshape(x.shape)) - of_input(down.reshape(x.shape)))
                    numerical.reshape(column.numel(), -1)[:, k] = column / (2 * eps)
            error = (analytical - numerical).abs().max().item()
        except Exception:
            continue
        if worst is None or error > worst[0]:
            worst = (error, index)
    return _worst_message(inputs, worst, "max abs error")


def _worst_projected_error(target: Target, inputs: Inputs) -> str:
    """`worst_error` for a slow forward: per input, the derivative along one
    random direction, from backward and from finite differences."""
    args = fresh(inputs.args)
    eps = target.precision.eps
    generator = torch.Generator(device="cpu").manual_seed(31)
    try:
        outputs = differentiable_outputs(target.apply(*args))
        weights = [torch.randn(o.shape, dtype=torch.float64, generator=generator).to(
            o.device, o.dtype) for o in outputs]
        positions = differentiable_positions(args)
        grads = torch.autograd.grad(outputs, [args[i] for i in positions], weights,
                                    allow_unused=True)
    except Exception:
        return ""
    worst: tuple[float, int] | None = None
    for index, grad in zip(positions, grads, strict=True):
        x = args[index]
        if x.is_complex():
            continue
        direction = torch.randn(x.shape, dtype=torch.float64, generator=generator).to(
            x.device, x.dtype)
        analytical = float((grad * direction).sum()) if grad is not None else 0.0
        try:
            numerical = _slope(target, args, index, direction, weights, eps)
        except Exception:
            continue
        error = abs(analytical - numerical)
        if worst is None or error > worst[0]:
            worst = (error, index)
    return _worst_message(inputs, worst, "the derivative along a random direction is off by")


def _slope(target: Target, args: tuple[Any, ...], index: int, direction: torch.Tensor,
           weights: list[torch.Tensor], step: float) -> float:
    """The derivative of forward's outputs, weighed by `weights`, along
    `direction` in input `index`: a central difference of `step`. Each call
    gets fresh copies, so a forward that updates an input in place (a fused
    residual add) does not drift between them."""
    moved = []
    for sign in (1.0, -1.0):
        call = list(fresh(args, requires=set()))
        call[index] = args[index].detach() + sign * step * direction
        moved.append(floating_outputs(target, call))
    up, down = moved
    return sum(float(((u - d) * w).sum()) for u, d, w in
               zip(up, down, weights, strict=True)) / (2 * step)


def _worst_message(inputs: Inputs, worst: tuple[float, int] | None, what: str) -> str:
    if worst is None:
        return ""
    error, index = worst
    return f"worst is input {index} (`{inputs.name(index)}`), {what} {error:.3g}"


# How much wider the second step of `differences_settle` is than the first.
WIDER = 4.0


def differences_settle(target: Target, inputs: Inputs) -> tuple[float, float] | None:
    """Whether finite differences are a verdict here: per input, the derivative
    along a fixed random direction from central differences with gradcheck's
    step and with a step four times wider, within the check's tolerances of
    each other. They are not when forward computes in bfloat16 or float16
    inside (its rounding, divided by a float32-sized step, is most of the
    difference) or is not smooth there. None when they settle (or cannot be
    taken); else the two derivatives of the input where they part most."""
    args = fresh(inputs.args, requires=set())
    precision = target.precision
    generator = torch.Generator(device="cpu").manual_seed(43)
    worst: tuple[float, float, float] | None = None
    try:
        reference = floating_outputs(target, args)
        weights = [torch.randn(o.shape, dtype=torch.float64, generator=generator).to(
            o.device, o.dtype) for o in reference]
        for index in differentiable_positions(inputs.args):
            x = args[index]
            if x.is_complex():
                continue
            direction = torch.randn(x.shape, dtype=torch.float64, generator=generator).to(
                x.device, x.dtype)
            narrow, wide = (_slope(target, args, index, direction, weights, step)
                            for step in (precision.eps, WIDER * precision.eps))
            gap = abs(narrow - wide)
            if gap > precision.atol + precision.rtol * abs(wide) and \
                    (worst is None or gap > worst[0]):
                worst = (gap, narrow, wide)
    except Exception:
        return None
    return None if worst is None else (worst[1], worst[2])

