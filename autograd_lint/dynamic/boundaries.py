"""Probes at the edges of the inputs that worked: forward without gradients,
dimensions of size 1 and non-power-of-two tails, non-contiguous layouts.

Kernel authors' gradient bugs sit there: a causal convolution wrong for a
sequence shorter than its width, a kernel that reads a transposed input as
if it were contiguous, a forward that breaks under `torch.no_grad()`. Each
probe starts from inputs the checks just passed and changes one thing, so
what disagrees is the change's doing:

- forward under `torch.no_grad()`, and with no input requiring grad: an
  error there, on inputs that work with gradients, is AGD003;
- each of the first few sizes of the tensor inputs cut to 1, and the largest
  power-of-two size cut by one (the inputs narrowed, values kept): a
  gradcheck that fails there is AGD001, noted with the shape. A shape the
  Function refuses (it raises), or on which its results are not repeatable,
  not finite, or change with what lies past the ends of its inputs, is no
  verdict;
- the floating inputs of two or more dimensions transposed in memory (same
  values, other strides): outputs or gradients that differ from the
  contiguous inputs' are AGD001.

The shape and layout probes run on public Functions only: a private one
(`_FusedNorm`) gets what its module's wrappers pass. Each probe runs where a
crash loses only that probe (`isolation.py`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from .errors import first_line
from .gradcheck import run_gradcheck
from .inputs import Inputs
from .isolation import PROBE_SECONDS, run_isolated
from .probing import (
    fresh,
    identical,
    reads_past_inputs,
    repeatable,
    transposed_in_memory,
    unit_results,
)
from .target import Target
from .verdicts import gradcheck_failure

MAX_SIZES = 3  # sizes cut to 1, the most common first: bounded, cheap first


def check_boundaries(target: Target, inputs: Inputs) -> None:
    """Every probe above, on inputs whose gradcheck passed; each in a child
    process where it may crash (`isolation.py`)."""
    before = len(target.findings)
    if not _isolated(target, lambda: _check_without_gradients(target, inputs)) or \
            len(target.findings) > before:
        return
    if target.cls.__name__.startswith("_"):
        # A private Function is reached through its module's wrappers, which
        # own the shapes and layouts it gets (`.contiguous()`, size checks):
        # a shape or layout they never pass is no evidence of a defect.
        return
    for shape_note, variant in _shape_variants(inputs):
        _isolated(target, lambda v=variant, n=shape_note: _check_variant(target, v, n))
    _isolated(target, lambda: _check_strided(target, inputs))


def _isolated(target: Target, probe: Callable[[], None]) -> bool:
    """The probe in a child process, within the time left for extras."""
    seconds = min(PROBE_SECONDS, target.time_for_extras())
    return seconds > 0 and run_isolated(target, probe, seconds)


def _check_without_gradients(target: Target, inputs: Inputs) -> None:
    """AGD003 when forward fails under no_grad or on inputs that do not
    require grad."""
    try:
        with torch.no_grad():
            target.apply(*fresh(inputs.args))
    except Exception as exc:
        target.report("AGD003", where="forward under `torch.no_grad()`",
                      detail=first_line(exc))
        return
    plain = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a
                  for a in inputs.args)
    try:
        target.apply(*plain)
    except Exception as exc:
        target.report("AGD003", where="forward with no input requiring grad",
                      detail=first_line(exc))


def _shape_variants(inputs: Inputs) -> Iterator[tuple[str, Inputs]]:
    """Inputs with every dimension of one size narrowed: to 1 for the most
    common sizes, by one for the largest power of two."""
    counts: dict[int, int] = {}
    for tensor in _floating(inputs.args):
        for size in tensor.shape:
            if size > 1:
                counts[size] = counts.get(size, 0) + 1
    ordered = sorted(counts, key=lambda s: (-counts[s], s))
    cuts = [(size, 1) for size in ordered[:MAX_SIZES]]
    powers = [s for s in ordered if s >= 4 and s & (s - 1) == 0]
    if powers:
        cuts.append((max(powers), max(powers) - 1))
    for size, new in cuts:
        variant = _narrowed(inputs, size, new)
        if variant is not None:
            yield _describe(size, new), variant


def _narrowed(inputs: Inputs, size: int, new: int) -> Inputs | None:
    """The inputs with each dimension of `size` cut to its first `new`
    entries; None when that could make the other arguments wrong (an integer
    argument equal to the size, index values the cut would leave out)."""
    args = []
    for value in inputs.args:
        if isinstance(value, int) and not isinstance(value, bool) and value == size:
            return None  # a size passed as a number too: it would no longer match
        if isinstance(value, torch.Tensor):
            if not value.is_floating_point() and not value.is_complex() and \
                    value.dtype != torch.bool and value.numel() and int(value.max()) >= new:
                return None  # indices into the dimension being cut
            for dim, length in enumerate(value.shape):
                if length == size:
                    value = value.narrow(dim, 0, new)
            value = value.detach().contiguous().clone().requires_grad_(value.requires_grad)
        args.append(value)
    return Inputs(tuple(args), inputs.names, inputs.source, none_defaults=inputs.none_defaults,
                  frozen=inputs.frozen, layout=inputs.layout, native=inputs.native)


def _describe(size: int, new: int) -> str:
    return f"with every size {size} cut to {new}, where gradcheck passes before the cut"


def _check_variant(target: Target, variant: Inputs, note: str) -> None:
    if not _works(target, variant):
        return  # refused, or not repeatable there: no verdict on that shape
    target.note = note
    try:
        run_gradcheck(target, fresh(variant.args))
    except Exception as exc:
        gradcheck_failure(target, variant, exc, "AGD001")
    finally:
        target.note = ""


def _works(target: Target, inputs: Inputs) -> bool:
    """forward and backward run, twice alike, with finite results that do
    not change with what lies past the ends of the inputs (a cut shape is
    made up: a kernel whose blocks do not divide it may read there)."""
    try:
        results = repeatable(target, inputs.args)
        return results is not None and \
            all(bool(torch.isfinite(t).all()) for t in results) and \
            not reads_past_inputs(target, inputs.args, results)
    except Exception:
        return False


def _check_strided(target: Target, inputs: Inputs) -> None:
    """AGD001 when transposed-in-memory inputs give other results."""
    positions = [i for i, a in enumerate(inputs.args) if isinstance(a, torch.Tensor)
                 and a.is_floating_point() and a.dim() >= 2 and a.shape[-1] > 1
                 and a.shape[-2] > 1]
    if not positions:
        return
    args = list(inputs.args)
    for i in positions:
        tensor = args[i]
        args[i] = transposed_in_memory(tensor).requires_grad_(tensor.requires_grad)
    try:
        contiguous = unit_results(target, inputs.args)
        again = unit_results(target, inputs.args)
        transposed = unit_results(target, tuple(args))
    except Exception:
        return  # a kernel that refuses non-contiguous inputs says so: no verdict
    if not identical([*contiguous[0], *contiguous[1]], [*again[0], *again[1]]) or \
            [t.shape for part in contiguous for t in part] != \
            [t.shape for part in transposed for t in part]:
        return
    rtol = target.precision.close_rtol  # two computations of the same values
    for what, ours, theirs in (("an output", contiguous[0], transposed[0]),
                               ("a gradient", contiguous[1], transposed[1])):
        for a, b in zip(ours, theirs, strict=True):
            if not torch.allclose(a, b, rtol=rtol, atol=rtol * 1e-2):
                error = (a - b).abs().max().item()
                names = ", ".join(f"`{inputs.name(i)}`" for i in positions)
                target.report("AGD001", detail=f"with {names} transposed in memory (the same "
                                               f"values, non-contiguous), {what} differs from "
                                               f"the contiguous inputs' by up to {error:.3g}: "
                                               "the kernel reads strided inputs as if they "
                                               "were contiguous")
                return


def _floating(args: tuple[Any, ...]) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
