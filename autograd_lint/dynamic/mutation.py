"""Input mutation: forward changed a tensor input it did not mark dirty
(AGD011)."""
from __future__ import annotations

from typing import Any

import torch

from .inputs import Inputs
from .probing import fresh, tensors_of
from .target import Target


def check_input_mutation(target: Target, inputs: Inputs) -> None:
    """AGD011: forward changed a tensor input it did not mark dirty. The
    inputs require grad as callers' do: kernels that write gradients into
    their inputs (fused losses) often do so only then."""
    args = fresh(inputs.args)
    before = [a.detach().clone() if isinstance(a, torch.Tensor) else None for a in args]
    try:
        output = target.apply(*args)
    except Exception:
        return  # check_forward_backward reports it
    dirty = _dirty_storage(output)
    for index, (arg, old) in enumerate(zip(args, before, strict=True)):
        if old is None or arg.data_ptr() in dirty:  # marked dirty: the contract is kept
            continue
        arg = arg.detach()
        if arg.shape != old.shape or not torch.equal(arg, old):
            change = (arg.double() - old.double()).abs().max().item() \
                if arg.shape == old.shape else float("nan")
            target.report("AGD011", index=index, name=inputs.name(index),
                          error=f"{change:.3g}")


def _dirty_storage(output: Any) -> set[int]:
    """Where the tensors forward passed to `ctx.mark_dirty` live."""
    found = set()
    for tensor in tensors_of(output):
        node = tensor.grad_fn
        for dirty in getattr(node, "dirty_tensors", None) or ():
            if isinstance(dirty, torch.Tensor):
                found.add(dirty.data_ptr())
    return found
