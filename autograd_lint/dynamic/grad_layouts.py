"""Incoming gradients in the layouts autograd really hands backward (AGD014).

autograd passes backward whatever layout the next node's backward produced:
`.sum()`'s backward an expanded stride-0 tensor, `torch.cat`'s a narrow view
of a larger gradient (its slice for each input), a transpose's a transposed
one. A backward that hands such a gradient to a kernel indexing it by shape
(`tl.load(dy_ptr + offs)`, no strides) reads the wrong elements; one that
calls `.view` on it raises.

Each output's incoming gradient is fed in each layout below, besides a
contiguous reference, and backward's results are compared with the ones a
contiguous tensor of the same values gives:

- an expanded stride-0 tensor: the gradient's first element broadcast over
  its shape. Its values differ from the reference's, so it is compared with
  backward of a contiguous copy of the same (broadcast) values. Its storage
  is the reference's own, the other values behind the first: a kernel that
  reads it as contiguous reads those, which differ (never memory past the
  end, as a one-element storage would give it);
- a narrow view of a larger buffer: the gradient's values at offset 1 of a
  buffer three elements wider in the last dimension, the rest of it other
  values (rows of a matrix are then a stride apart that is not their width);
- a transposed tensor (matrices and batches of them): the last two
  dimensions swapped in memory;
- a strided view, every other element of a buffer (gradients that cannot be
  transposed: vectors, and rows or columns of one element).

A layout that changes none of the gradients is not fed. The first layout
backward fails with is reported, with the others that fail beside it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from .errors import first_line
from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, map_tensors, transposed_in_memory
from .target import Target

Gradients = list[torch.Tensor | None]
# A layout of one gradient: the same values (or, expanded, values of its
# own) in another layout; None where it cannot change that gradient.
MakeLayout = Callable[[torch.Tensor, torch.Generator], torch.Tensor | None]


@dataclass(frozen=True)
class Layout:
    name: str  # as the message says it: "the incoming gradient is {name}"
    make: MakeLayout


def _expanded(grad: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """The first element broadcast (every stride 0), its storage a copy of
    the whole gradient: what lies behind it are the other values."""
    if grad.numel() <= 1:
        return None
    first = grad.clone().reshape(-1)[:1]
    return first.reshape([1] * grad.dim()).expand(grad.shape)


def _narrow(grad: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """The same values at offset 1 of a buffer three wider in the last dimension."""
    if grad.dim() == 0 or grad.numel() == 0:
        return None
    last = grad.shape[-1]
    buffer = _other_values((*grad.shape[:-1], last + 3), grad, generator)
    view = buffer[..., 1:last + 1]
    view.copy_(grad)
    return view


def _transposed(grad: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    if not _transposable(grad):
        return None
    return transposed_in_memory(grad)


def _strided(grad: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """Every other element of a buffer twice as wide, for what cannot be transposed."""
    if grad.dim() == 0 or grad.shape[-1] < 2 or _transposable(grad):
        return None
    buffer = _other_values((*grad.shape[:-1], grad.shape[-1] * 2), grad, generator)
    view = buffer[..., ::2]
    view.copy_(grad)
    return view


def _transposable(grad: torch.Tensor) -> bool:
    return grad.dim() >= 2 and grad.shape[-1] > 1 and grad.shape[-2] > 1


def _other_values(shape: tuple[int, ...], like: torch.Tensor,
                  generator: torch.Generator) -> torch.Tensor:
    """A buffer of random values: what a kernel reading outside a view finds."""
    return (torch.randn(shape, dtype=like.dtype, generator=generator) + 7).to(like.device)


LAYOUTS = (
    Layout("an expanded stride-0 tensor", _expanded),
    Layout("a narrow view of a larger buffer", _narrow),
    Layout("a transposed tensor", _transposed),
    Layout("a strided view (every other element)", _strided),
)


def check_noncontiguous_grad_output(target: Target, inputs: Inputs) -> None:
    """AGD014: each layout of the incoming gradients against a contiguous
    tensor of the same values."""
    try:
        incoming = _incoming(target, inputs)
        reference = _backward(target, inputs, [g.clone() for g in incoming])
        again = _backward(target, inputs, [g.clone() for g in incoming])
    except Exception:
        return  # the contiguous run fails: other probes' question
    if _compare(target, inputs, reference, again) is not None:
        # Two contiguous runs already differ (an interpreted kernel reading
        # past its buffer for this shape): no layout can be blamed.
        return
    generator = torch.Generator(device="cpu").manual_seed(12)
    failures: list[tuple[str, str]] = []
    for layout in LAYOUTS:
        made = [layout.make(g, generator) for g in incoming]
        if all(m is None for m in made):
            continue
        fed = [g.clone() if m is None else m for g, m in zip(incoming, made, strict=True)]
        detail = _difference(target, inputs, incoming, reference, fed)
        if detail is not None:
            failures.append((layout.name, detail))
    if failures:
        (layout, detail), others = failures[0], [name for name, _ in failures[1:]]
        target.report("AGD014", detail=detail, layout=layout,
                      also=f" (also {', '.join(others)})" if others else "")


def _difference(target: Target, inputs: Inputs, incoming: list[torch.Tensor],
                reference: Gradients, fed: list[torch.Tensor]) -> str | None:
    """How backward's results with the gradients `fed` differ from those of a
    contiguous tensor of the same values (None: they do not)."""
    if all(torch.equal(f, g) for f, g in zip(fed, incoming, strict=True)):
        expected = reference
    else:  # values of its own (expanded): backward of them contiguous
        contiguous = [f.clone(memory_format=torch.contiguous_format) for f in fed]
        try:
            expected = _backward(target, inputs, contiguous)
        except Exception:
            return None
    try:
        got = _backward(target, inputs, fed)
    except Exception as exc:
        return f"raises {first_line(exc)}"
    return _compare(target, inputs, expected, got)


def _compare(target: Target, inputs: Inputs, expected: Gradients,
             got: Gradients) -> str | None:
    rtol = target.precision.close_rtol
    positions = differentiable_positions(inputs.args)
    for position, a, b in zip(positions, expected, got, strict=True):
        which = f"input {position} (`{inputs.name(position)}`)"
        if a is None or b is None:
            if (a is None) != (b is None):
                return f"returns {'None' if b is None else 'a gradient'} for {which}"
            continue
        if a.shape != b.shape:
            return f"returns a gradient of shape {list(b.shape)} for {which}"
        # Rounding grows with the gradient's scale (a kernel may sum in
        # another order for another layout); elements read from the wrong
        # place differ by the scale itself.
        scale = max(float(a.abs().nan_to_num(posinf=0.0).max()) if a.numel() else 0.0, 1e-2)
        if not torch.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True):
            error = (a - b).abs().nan_to_num(nan=float("inf")).max().item()
            return f"returns a different gradient for {which} (max abs difference {error:.3g})"
    return None


def _incoming(target: Target, inputs: Inputs) -> list[torch.Tensor]:
    """A random contiguous gradient for each differentiable output."""
    with _seeded(target.device):
        outputs = differentiable_outputs(target.apply(*_copies(inputs.args)))
    generator = torch.Generator(device="cpu").manual_seed(11)
    return [torch.randn(o.shape, dtype=o.dtype, generator=generator).to(o.device)
            for o in outputs]


def _backward(target: Target, inputs: Inputs, incoming: list[torch.Tensor]) -> Gradients:
    """forward on fresh copies of the inputs, then backward with `incoming`."""
    args = _copies(inputs.args)
    with _seeded(target.device):
        outputs = differentiable_outputs(target.apply(*args))
    wanted = [args[i] for i in differentiable_positions(args)]
    grads = torch.autograd.grad(outputs, wanted, incoming, allow_unused=True)
    return [None if g is None else g.detach() for g in grads]


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies with their own history, lists of tensors (an op's) included."""
    return map_tensors(args, lambda t: t.detach().clone().requires_grad_(t.requires_grad))


@contextmanager
def _seeded(device: torch.device) -> Iterator[None]:
    """The generators of the CPU and of the Function's device seeded alike
    for every run (a forward that draws random numbers, dropout, saves the
    same mask each time), their state kept. Only those two: the worker may
    stand in for CUDA on a CPU, where seeding every device would ask it."""
    cpu = torch.random.default_generator
    cpu_state = cpu.get_state()
    cuda = device.type == "cuda" and torch.cuda.is_initialized()
    cuda_state = torch.cuda.get_rng_state(device) if cuda else None
    try:
        cpu.manual_seed(5)
        if cuda:
            torch.cuda.default_generators[device.index or 0].manual_seed(5)
        yield
    finally:
        cpu.set_state(cpu_state)
        if cuda_state is not None:
            torch.cuda.set_rng_state(cuda_state, device)
