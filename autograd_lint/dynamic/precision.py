"""The precision ladder: what a Function computes in, and the tolerances its
checks use there.

float64 inputs first. A Function that keeps float64 is gradchecked as PyTorch
does. One whose outputs do not change when its inputs are rounded to float32
computes in float32 (a Triton or CUDA kernel loading float32): it is checked
with a step and tolerances calibrated to float32. One that refuses float64 but
takes float32 likewise; one that only takes bfloat16/float16 is compared with
a declared reference implementation (`reference.py`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .errors import CodeError, NotChecked, first_line, raise_if_code_error
from .inputs import Inputs
from .probing import first_forward, floating_outputs, fresh, tensors_of

if TYPE_CHECKING:  # target.py imports this module
    from .target import Target

SLOW_FORWARD_SECONDS = 0.02


@dataclass(frozen=True)
class Precision:
    """What a Function computes in, and how finely it can be checked there."""

    name: str  # float64 | float32 | bfloat16 | float16
    dtype: torch.dtype  # the inputs' dtype
    note: str = ""
    eps: float = 1e-6  # finite-difference step
    atol: float = 1e-5
    rtol: float = 1e-3
    nondet_tol: float = 1e-10  # differences between two identical backward calls
    close_rtol: float = 1e-7  # two computations of the same values (layouts, vmap)

    def describe(self) -> str:
        return f"{self.name} ({self.note})" if self.note else self.name

    def scaled(self, magnitude: float) -> Precision:
        """atol for outputs of this size: rounding noise grows with them."""
        if self.name == "float64" or magnitude <= 1:
            return self
        return Precision(self.name, self.dtype, self.note, self.eps, self.atol * magnitude,
                         self.rtol, self.nondet_tol * magnitude, self.close_rtol)


FLOAT64 = Precision("float64", torch.float64)


def float32(dtype: torch.dtype, note: str) -> Precision:
    return Precision("float32", dtype, note, eps=1e-3, atol=2e-3, rtol=1e-2, nondet_tol=1e-5,
                     close_rtol=1e-5)


HALF = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
LADDER = (torch.float64, torch.float32, torch.bfloat16, torch.float16)


def dtype_of(inputs: Inputs) -> torch.dtype:
    return next((a.dtype for a in inputs.args if isinstance(a, torch.Tensor) and
                 a.dtype in LADDER), torch.float64)


def settle_precision(target: Target, inputs: Inputs) -> Inputs:
    """Set `target.precision` and return the inputs in its dtype."""
    last: Exception | None = None
    start = dtype_of(inputs)
    if inputs.trusted and start in HALF:
        # The project's own half-precision inputs: widened to float32 (exactly)
        # where forward takes it, a check finer than half precision allows.
        start = torch.float32
    for dtype in LADDER[LADDER.index(start):]:
        trial = inputs.with_dtype(dtype)
        try:
            started = time.perf_counter()
            output = first_forward(target, trial.args)
            target.fast = time.perf_counter() - started > SLOW_FORWARD_SECONDS
        except Exception as exc:
            raise_if_code_error(exc, "forward")
            last = exc
            continue
        if dtype == torch.float64:
            target.precision = _effective_precision(target, trial, output)
        elif dtype == torch.float32:
            target.precision = float32(dtype, _float32_note(inputs))
        else:
            target.precision = Precision(HALF[dtype], dtype, "forward takes nothing wider")
        magnitude = max((float(t.detach().abs().max()) for t in tensors_of(output)
                         if t.is_floating_point() and t.numel()), default=1.0)
        target.precision = target.precision.scaled(magnitude)
        return trial
    if inputs.trusted and last is not None:
        raise CodeError("forward", f"{first_line(last)} (with {inputs.describe()})")
    raise NotChecked(f"forward raised {first_line(last)} with {inputs.describe()}"
                     if last else "forward cannot be run")


def _float32_note(inputs: Inputs) -> str:
    """Why a check runs in float32: the project's own inputs are that narrow,
    or forward refuses float64."""
    native = dtype_of(inputs)
    if not inputs.trusted or native == torch.float64:
        return "it does not run in float64"
    if native == torch.float32:
        return f"the {inputs.source} inputs are float32"
    return f"the {inputs.source} inputs are {HALF[native]}, widened"


def _effective_precision(target: Target, inputs: Inputs, output: Any) -> Precision:
    """float64, unless forward or backward ignores changes to its inputs that
    only float64 can hold: it computes narrower (a kernel that loads float32,
    a backward that upcasts a bf16 kernel's gradients to float32), wholly or
    in part. Forward is probed alone first, so a wrong backward cannot sway
    what forward computes in; a backward that raises leaves float64."""
    if _computes_narrower(_forward_values(target, inputs)):
        return float32(torch.float64, "computes in float32 on float64 inputs, wholly or in part")
    if _computes_narrower(_backward_values(target, inputs)):
        return float32(torch.float64, "backward computes in float32 on float64 inputs")
    return FLOAT64


# What a probe moves: (the values it starts from, the directions it moves
# them in), and the floating results it reads back from moved values (None:
# it could not run, or its results changed shape).
_Probe = tuple[list[torch.Tensor], list[torch.Tensor],
               Callable[[list[torch.Tensor]], list[torch.Tensor] | None]]


def _computes_narrower(probe: _Probe | None) -> bool:
    """Whether a computation's results, weighed by fixed random weights, see
    its inputs moved along fixed random directions by two relative steps
    alike: one below float32's resolution, one well above it. A float64
    computation responds to both alike (the same slope); float32 parts do
    not see the small step at all."""
    if probe is None:
        return False
    values, directions, results = probe
    reference = results(values)
    if not reference:
        return False
    generator = torch.Generator(device="cpu").manual_seed(31)
    weights = [torch.randn(t.shape, dtype=torch.float64, generator=generator).to(t.device)
               for t in reference]

    def slope(step: float) -> float | None:
        moved = [v + step * v.abs().clamp(min=1e-3) * d
                 for v, d in zip(values, directions, strict=True)]
        outputs = results(moved)
        if outputs is None or [o.shape for o in outputs] != [r.shape for r in reference]:
            return None
        return sum(float(((o - r) * w).sum()) for o, r, w in
                   zip(outputs, reference, weights, strict=True)) / step

    fine, coarse = slope(2.0 ** -34), slope(2.0 ** -16)
    if fine is None or coarse is None:
        return False
    scale = max(abs(coarse), 1e-6 * sum(float((r * w).abs().sum())
                                        for r, w in zip(reference, weights, strict=True)))
    return abs(fine - coarse) > 1e-2 * scale


def _directions(values: list[torch.Tensor], seed: int) -> list[torch.Tensor]:
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(v.shape, dtype=torch.float64, generator=generator).to(v.device)
            for v in values]


def _forward_values(target: Target, inputs: Inputs) -> _Probe | None:
    """forward's floating outputs as its floating tensor inputs move."""
    floating = [i for i, a in enumerate(inputs.args)
                if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not floating:
        return None
    values = [inputs.args[i].detach() for i in floating]

    def results(moved: list[torch.Tensor]) -> list[torch.Tensor] | None:
        args = list(fresh(inputs.args))
        for i, value in zip(floating, moved, strict=True):
            args[i] = value
        try:
            return [t.double() for t in floating_outputs(target, tuple(args))]
        except Exception:
            return None

    return values, _directions(values, 29), results


def _backward_values(target: Target, inputs: Inputs) -> _Probe | None:
    """backward's gradients as the inputs it reads move: the incoming
    gradients (fixed random ones) and the tensors forward saved from its
    floating inputs."""
    positions = [i for i, a in enumerate(inputs.args)
                 if isinstance(a, torch.Tensor) and a.is_floating_point() and a.requires_grad]
    if not positions:
        return None
    try:
        outputs = [o for o in tensors_of(first_forward(target, inputs.args))
                   if o.requires_grad and o.is_floating_point()]
    except Exception:
        return None
    if not outputs:
        return None
    generator = torch.Generator(device="cpu").manual_seed(37)
    incoming = [torch.randn(o.shape, dtype=o.dtype, generator=generator).to(o.device)
                for o in outputs]
    values = [inputs.args[i].detach() for i in positions] + incoming

    def results(moved: list[torch.Tensor]) -> list[torch.Tensor] | None:
        args = list(fresh(inputs.args))
        for i, value in zip(positions, moved[:len(positions)], strict=True):
            args[i] = value.detach().clone().requires_grad_(True)
        try:
            produced = [o for o in tensors_of(target.apply(*args))
                        if o.requires_grad and o.is_floating_point()]
            if len(produced) != len(outputs):
                return None
            grads = torch.autograd.grad(produced, [args[i] for i in positions],
                                        moved[len(positions):], allow_unused=True)
        except Exception:
            return None
        return [g.detach().double() for g in grads if g is not None]

    return values, _directions(values, 41), results
