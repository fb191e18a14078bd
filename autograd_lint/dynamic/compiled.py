"""AGD017: the same call eagerly and under `torch.compile(backend="aot_eager")`.

aot_eager traces forward and backward into graphs and runs them with the
eager kernels: no fusion, no change of numerics. What differs is what the
code computes while it is traced: a `torch.compiler.is_compiling()` path,
state read at trace time, a backward dynamo inlines differently. Outputs and
gradients (of a fixed weighted sum of the outputs) are compared at the
tolerances of the precision the code computes in, after two eager runs agree
with each other. A compile that raises is the environment's or torch's
problem, not a finding: AGD900 says so and names the error.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .errors import first_line
from .precision import Precision
from .probing import tensors_in, tensors_of
from .target import Target

_WEIGHT_SEED = 1234


def compare_compiled(target: Target, call: Any, make_args: Any) -> None:
    """AGD017 for one call (AGD900 when torch.compile cannot run here). Not
    where the run leans on the CPU stand-ins (Triton's interpreter, CUDA
    queries answered): dynamo would trace them, not what users compile, and
    fails on them; the comparison is for a machine that runs the code."""
    if target.emulated():
        return
    try:
        found = compiled_difference(call, make_args, target.precision)
    except CompileFailed as exc:
        target.report("AGD900", reason=f"not compared with torch.compile, which raised {exc}")
        return
    if found is not None:
        what, detail = found
        target.report("AGD017", what=what, detail=detail,
                      precision=target.precision.describe())


def compiled_difference(call: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]],
                        precision: Precision) -> tuple[str, str] | None:
    """(what differs, how much) between eager and compiled runs of `call`,
    or None when they agree (or eager does not agree with itself). Raises
    CompileFailed when compiling fails."""
    first = _run(call, make_args())
    second = _run(call, make_args())
    if first is None or second is None or _difference(first, second, precision) is not None:
        return None  # eager does not repeat itself: no baseline to compare with
    import torch._dynamo

    torch._dynamo.reset()
    try:
        compiled = _run(torch.compile(call, backend="aot_eager", dynamic=False), make_args(),
                        raising=True)
    except Exception as exc:
        raise CompileFailed(first_line(exc)) from None
    finally:
        torch._dynamo.reset()
    assert compiled is not None
    return _difference(first, compiled, precision)


class CompileFailed(Exception):
    """torch.compile raised: not a verdict on the code (AGD900)."""


def _run(call: Callable[..., Any], args: tuple[Any, ...], raising: bool = False
         ) -> tuple[list[torch.Tensor], list[torch.Tensor]] | None:
    """(floating outputs, gradients of the inputs that require grad)."""
    try:
        outputs = [t for t in tensors_of(call(*args)) if t.is_floating_point()]
        leaves = [t for t in tensors_in(args) if t.requires_grad]
        differentiable = [t for t in outputs if t.requires_grad]
        grads: list[torch.Tensor] = []
        if differentiable and leaves:
            total = sum((t.double() * _weights(t)).sum() for t in differentiable)
            found = torch.autograd.grad(total, leaves, allow_unused=True)
            grads = [g.detach() if g is not None else torch.zeros_like(leaf)
                     for g, leaf in zip(found, leaves, strict=True)]
    except Exception:
        if raising:
            raise
        return None
    return [t.detach() for t in outputs], grads


def _weights(tensor: torch.Tensor) -> torch.Tensor:
    """The same weights in every run: each output element counts differently."""
    generator = torch.Generator().manual_seed(_WEIGHT_SEED)
    return torch.rand(tensor.shape, generator=generator, dtype=torch.float64).to(tensor.device)


def _difference(expected: tuple[list[torch.Tensor], list[torch.Tensor]],
                got: tuple[list[torch.Tensor], list[torch.Tensor]],
                precision: Precision) -> tuple[str, str] | None:
    for what, first, second in (("outputs", expected[0], got[0]),
                                ("gradients", expected[1], got[1])):
        if len(first) != len(second):
            return what, f"{len(second)} instead of {len(first)}"
        for index, (a, b) in enumerate(zip(first, second, strict=True)):
            if a.shape != b.shape:
                return what, f"{what[:-1]} {index} has shape {list(b.shape)}, " \
                             f"not {list(a.shape)}"
            a64, b64 = a.double(), b.double()
            scale = max(1.0, float(a64.abs().max()) if a64.numel() else 1.0)
            tolerance = precision.scaled(scale)
            if not torch.allclose(b64, a64, rtol=tolerance.rtol, atol=tolerance.atol,
                                  equal_nan=True):
                error = float((b64 - a64).abs().max())
                return what, f"{what[:-1]} {index}: max abs difference {error:.3g}"
    return None
