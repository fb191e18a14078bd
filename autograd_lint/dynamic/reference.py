"""Half precision: a Function that only computes in bfloat16/float16 is
checked against a declared reference implementation (AGD001)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .errors import NotChecked, first_line
from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, fresh, tensors_of
from .target import Target
from .verdicts import report_backward_error


def reference_of(cls: type) -> Callable[..., Any] | None:
    """A declared reference implementation: a `reference` staticmethod, or
    `@example_inputs(..., reference=fn)`."""
    from . import REFERENCE_ATTRIBUTE

    declared_reference = getattr(cls, REFERENCE_ATTRIBUTE, None)
    if callable(declared_reference):
        return declared_reference
    candidate = getattr(cls, "reference", None)
    return candidate if callable(candidate) else None


def check_against_reference(target: Target, inputs: Inputs) -> None:
    """AGD001 for a Function that only computes in bfloat16/float16: its
    outputs and gradients against a reference implementation in float64."""
    reference = reference_of(target.cls)
    precision = target.precision
    if reference is None:
        raise NotChecked(f"it computes only in {precision.name} ({precision.note}), where "
                         "finite differences say nothing; declare a reference "
                         "implementation (a `reference` staticmethod taking forward's inputs, "
                         "or `@example_inputs(..., reference=fn)`) to check it against")
    low = fresh(inputs.args)
    wide = fresh(inputs.with_dtype(torch.float64).args)
    try:
        got = differentiable_outputs(target.apply(*low))
    except Exception as exc:
        target.report("AGD003", where="forward", detail=first_line(exc))
        return
    try:
        expected = [t for t in tensors_of(reference(*wide)) if t.is_floating_point()]
    except Exception as exc:
        raise NotChecked(f"the reference implementation raised {first_line(exc)}") from None
    tolerance = 3e-2 if precision.name == "bfloat16" else 5e-3
    if len(got) != len(expected):
        raise NotChecked("the reference returns a different number of tensors than forward")
    generator = torch.Generator(device="cpu").manual_seed(13)
    grads = [torch.randn(t.shape, dtype=torch.float64, generator=generator).to(t.device)
             for t in expected]
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        if a.shape != b.shape or not _near(a.double(), b, tolerance):
            target.report("AGD001", detail=f"output {index} differs from the reference by "
                          f"{_gap(a.double(), b)} ({inputs.describe()})",
                          precision=f"{precision.name}, against the declared reference")
            return
    try:
        low_grads = torch.autograd.grad(got, [low[i] for i in differentiable_positions(low)],
                                        [g.to(o.dtype) for g, o in zip(grads, got, strict=True)],
                                        allow_unused=True)
        wide_grads = torch.autograd.grad(expected,
                                         [wide[i] for i in differentiable_positions(wide)],
                                         grads, allow_unused=True)
    except Exception as exc:
        report_backward_error(target, inputs, exc)  # type: ignore[arg-type]
        return
    for position, a, b in zip(differentiable_positions(low), low_grads, wide_grads,
                              strict=True):
        if a is None or b is None:
            continue
        if not _near(a.double(), b, tolerance):
            target.report("AGD001", detail=f"the gradient of input {position} "
                          f"(`{inputs.name(position)}`) differs from the reference's by "
                          f"{_gap(a.double(), b)} ({inputs.describe()})",
                          precision=f"{precision.name}, against the declared reference")
            return


def _near(a: torch.Tensor, b: torch.Tensor, tolerance: float) -> bool:
    scale = max(float(b.abs().max()) if b.numel() else 0.0, 1.0)
    return bool((a - b).abs().max() <= tolerance * scale) if a.numel() else True


def _gap(a: torch.Tensor, b: torch.Tensor) -> str:
    return f"{(a - b).abs().max().item():.3g}" if a.shape == b.shape else \
        f"shape {list(a.shape)} against {list(b.shape)}"
