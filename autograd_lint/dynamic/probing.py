"""What every probe does with a Function: call it on fresh copies of its
inputs, pick out its tensor outputs, run a backward with unit gradients."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from .inputs import differentiable_positions

if TYPE_CHECKING:  # target.py imports this module (through precision.py)
    from .target import Target


def tensors_of(output: Any) -> list[torch.Tensor]:
    items = output if isinstance(output, (tuple, list)) else (output,)
    return [t for t in items if isinstance(t, torch.Tensor)]


def differentiable_outputs(output: Any) -> list[torch.Tensor]:
    return [t for t in tensors_of(output)
            if t.requires_grad and (t.is_floating_point() or t.is_complex())]


def fresh(args: tuple[Any, ...], requires: set[int] | None = None) -> tuple[Any, ...]:
    """A copy of the inputs with their own autograd history (checks must not
    share leaves), `requires` choosing which keep requires_grad."""
    copied = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            keep = a.requires_grad and (requires is None or i in requires)
            a = a.detach().clone().requires_grad_(keep)
        copied.append(a)
    return tuple(copied)


def unit_backward(target: Target, args: tuple[Any, ...],
                  ones: Callable[[torch.Tensor], torch.Tensor] = torch.ones_like
                  ) -> tuple[list[torch.Tensor], list[int], tuple[torch.Tensor | None, ...]]:
    """forward on `args`, then backward with incoming gradients of ones (each
    made by `ones` from its output): (differentiable outputs, differentiable
    input positions, their gradients)."""
    outputs = differentiable_outputs(target.apply(*args))
    positions = differentiable_positions(args)
    grads = torch.autograd.grad(outputs, [args[i] for i in positions],
                                [ones(o) for o in outputs], allow_unused=True)
    return outputs, positions, grads


def floating_outputs(target: Target, args: tuple[Any, ...] | list[Any]) -> list[torch.Tensor]:
    """forward's real floating-point outputs, without a graph (probes of forward alone)."""
    with torch.no_grad():
        return [t.detach() for t in tensors_of(target.apply(*args)) if t.is_floating_point()]


def first_forward(target: Target, args: tuple[Any, ...]) -> Any:
    """forward on fresh copies of `args`. An in-place Function (mark_dirty)
    rejects leaves that require grad: it then gets copies, as its callers pass."""
    try:
        return target.apply(*fresh(args))
    except RuntimeError as exc:
        if "leaf Variable that requires grad" not in str(exc) or target.copy_leaves:
            raise
    target.copy_leaves = True
    return target.apply(*fresh(args))


def unit_results(target: Target, args: tuple[Any, ...]
                 ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """`unit_backward` on fresh copies of `args`: forward's differentiable
    outputs and the gradients, detached (what two runs are compared by)."""
    outputs, _, grads = unit_backward(target, fresh(args))
    return [t.detach() for t in outputs], [t.detach() for t in grads if t is not None]


def map_tensors(args: tuple[Any, ...], change: Callable[[torch.Tensor], torch.Tensor]
                ) -> tuple[Any, ...]:
    """The arguments with `change` applied to each tensor, also inside a list
    of tensors (a custom op's `Tensor[]` parameter)."""
    return tuple([change(v) if isinstance(v, torch.Tensor) else v for v in a]
                 if isinstance(a, list) else change(a) if isinstance(a, torch.Tensor) else a
                 for a in args)


def tensors_in(args: tuple[Any, ...]) -> list[torch.Tensor]:
    """The tensors among the arguments, also those inside a list or tuple."""
    return [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
            if isinstance(t, torch.Tensor)]


def transposed_in_memory(tensor: torch.Tensor) -> torch.Tensor:
    """The same values, the last two dimensions swapped in memory (non-contiguous)."""
    return tensor.detach().transpose(-1, -2).contiguous().transpose(-1, -2)


def identical(first: list[torch.Tensor], second: list[torch.Tensor]) -> bool:
    """Two runs' tensors, equal element for element."""
    return len(first) == len(second) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second, strict=True))


def repeatable(target: Target, args: tuple[Any, ...]) -> list[torch.Tensor] | None:
    """forward's outputs and gradients when two runs give them alike and no
    result is read from memory a kernel leaves unwritten; else None. (Two
    runs may agree on unwritten memory: the allocator hands the second run
    the block the first freed, stale values and all. A third run, with
    torch's deterministic mode filling new memory with NaN, shows it.)
    Raises what the runs raise."""
    first, second = ([*outputs, *grads] for outputs, grads in
                     (unit_results(target, args) for _ in range(2)))
    if not identical(first, second):
        return None
    with _new_memory_as_nan() as filling:
        outputs, grads = unit_results(target, args)
    if filling and _gained_nan(first, [*outputs, *grads]):
        return None
    return first


def _gained_nan(reference: list[torch.Tensor], results: list[torch.Tensor]) -> bool:
    """Whether a floating result holds NaN where the same run's `reference`
    has a number (the run read memory that was filled with NaN)."""
    return len(results) == len(reference) and any(
        a.shape == b.shape and a.is_floating_point() and
        bool((torch.isnan(b) & ~torch.isnan(a)).any())
        for a, b in zip(reference, results, strict=True))


# Elements of NaN laid before and after each input by `reads_past_inputs`
# (an even count keeps the input as aligned as the buffer).
REDZONE = 4096


def reads_past_inputs(target: Target, args: tuple[Any, ...], reference: list[torch.Tensor]
                      ) -> bool:
    """Whether forward or backward reads memory past the ends of an input:
    run with each floating input (and each incoming gradient) inside a
    buffer whose other elements are NaN, a result is NaN that `reference`
    (the same run on plain copies: outputs, then gradients) has not. A
    kernel without a mask reads there for a shape its blocks do not divide."""
    padded = tuple(_in_redzone(a) if isinstance(a, torch.Tensor) else a for a in args)
    outputs, _, grads = unit_backward(target, padded,
                                      ones=lambda o: _in_redzone(torch.ones_like(o)))
    return _gained_nan(reference, [t.detach() for t in outputs] +
                       [t for t in grads if t is not None])


def _in_redzone(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of a floating contiguous tensor whose storage holds NaN on
    either side of it (requiring grad as the tensor does); others, a copy."""
    if not tensor.is_floating_point() or not tensor.is_contiguous():
        return tensor.detach().clone().requires_grad_(tensor.requires_grad)
    buffer = torch.full((tensor.numel() + 2 * REDZONE,), float("nan"), dtype=tensor.dtype,
                        device=tensor.device)
    inside = buffer[REDZONE:REDZONE + tensor.numel()].view(tensor.shape)
    inside.copy_(tensor.detach())
    return inside.detach().requires_grad_(tensor.requires_grad)


@contextmanager
def _new_memory_as_nan() -> Iterator[bool]:
    """torch.empty and its kin filled with NaN (integers with their largest
    value), as torch's deterministic mode does; warn-only, so that no op
    refuses to run, and its warnings kept quiet. Through torch's own switch,
    not `torch.use_deterministic_algorithms`, which imports the inductor
    (and Triton with it: the run would then look emulated). Yields whether
    the memory is filled (False where this torch has no such switch)."""
    import warnings

    from torch.utils import deterministic

    switch = getattr(torch._C, "_set_deterministic_algorithms", None)
    if switch is None:
        yield False
        return
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = deterministic.fill_uninitialized_memory
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            switch(True, warn_only=True)
            deterministic.fill_uninitialized_memory = True
            yield True
    finally:
        switch(enabled, warn_only=warn_only)
        deterministic.fill_uninitialized_memory = fill
