"""Incoming gradients in other layouts: the same values, non-contiguous or
expanded, must give the same gradients (AGD014)."""
from __future__ import annotations

from collections.abc import Callable

import torch

from .errors import first_line
from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, fresh
from .target import Target


def check_noncontiguous_grad_output(target: Target, inputs: Inputs) -> None:
    """AGD014: the same gradient values in a strided or expanded layout."""

    def gradients(make: Callable[[torch.Tensor], torch.Tensor]) -> list[torch.Tensor | None]:
        args = fresh(inputs.args)
        outputs = differentiable_outputs(target.apply(*args))
        generator = torch.Generator(device="cpu").manual_seed(11)
        grads = [make(torch.randn(o.shape, dtype=o.dtype, generator=generator).to(o.device))
                 for o in outputs]
        wanted = [args[i] for i in differentiable_positions(args)]
        return list(torch.autograd.grad(outputs, wanted, grads, allow_unused=True))

    layouts = {
        "non-contiguous (transposed or strided)": _strided,
        "expanded (stride 0)": lambda g: g.reshape(-1)[:1].reshape([1] * g.dim()).expand(
            g.shape) if g.dim() else g,
    }
    try:
        reference_expanded = gradients(lambda g: (g.reshape(-1)[:1].reshape([1] * g.dim())
                                                  .expand(g.shape).contiguous()
                                                  if g.dim() else g))
        reference = gradients(lambda g: g)
    except Exception:
        return
    rtol = target.precision.close_rtol
    for layout, make in layouts.items():
        expected = reference_expanded if layout.startswith("expanded") else reference
        try:
            got = gradients(make)
        except Exception as exc:
            target.report("AGD014", detail=f"raises {first_line(exc)}", layout=layout)
            return
        for a, b in zip(expected, got, strict=True):
            if (a is None) != (b is None) or (a is not None and b is not None and
                                              not torch.allclose(a, b, rtol=rtol,
                                                                 atol=rtol * 1e-2)):
                target.report("AGD014", detail="returns different gradients", layout=layout)
                return


def _strided(g: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous tensor: column-major for matrices
    (what a transposed matmul hands back), every other element for vectors."""
    if g.dim() == 0:
        return g
    if g.dim() >= 2 and g.shape[-1] > 1 and g.shape[-2] > 1:
        return g.transpose(-1, -2).contiguous().transpose(-1, -2)
    wide = torch.zeros(*g.shape[:-1], g.shape[-1] * 2, dtype=g.dtype, device=g.device)
    wide[..., ::2] = g
    return wide[..., ::2]
