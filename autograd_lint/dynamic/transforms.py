"""torch's function transforms: forward-mode AD (AGD008) and vmap (AGD009)."""
from __future__ import annotations

import torch

from .errors import first_line
from .gradcheck import run_gradcheck
from .inputs import Inputs
from .probing import fresh, tensors_of
from .signatures import uses_setup_context
from .target import Target


def check_forward_ad(target: Target, inputs: Inputs) -> None:
    """AGD008."""
    if not uses_setup_context(target.cls):
        return  # forward AD needs setup_context; AGF/torch report the style
    try:
        run_gradcheck(target, fresh(inputs.args), check_forward_ad=True, check_backward_ad=False)
    except Exception as exc:
        target.report("AGD008", detail=first_line(exc))


def check_vmap(target: Target, inputs: Inputs) -> None:
    """AGD009: torch.vmap against a Python loop over the batch."""
    batch = 2
    args = fresh(inputs.args, requires=set())
    floating = [i for i, a in enumerate(args)
                if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not floating:
        return
    generator = torch.Generator(device="cpu").manual_seed(5)
    batched = list(args)
    for i in floating:
        noise = torch.rand((batch, *args[i].shape), dtype=torch.float64, generator=generator)
        batched[i] = (noise + 0.5).to(args[i].device, args[i].dtype)
    in_dims = tuple(0 if i in floating else None for i in range(len(args)))
    try:
        looped = [target.apply(*[batched[i][b] if i in floating else batched[i]
                                 for i in range(len(args))]) for b in range(batch)]
    except Exception:
        return  # the per-sample call itself fails: other checks cover forward
    try:
        vmapped = torch.vmap(target.apply, in_dims=in_dims)(*batched)
    except Exception as exc:
        target.report("AGD009", detail=f"raises {first_line(exc)}")
        return
    expected = [torch.stack(list(outs)) for outs in zip(*[tensors_of(o) for o in looped],
                                                          strict=True)]
    got = tensors_of(vmapped)
    rtol = max(target.precision.close_rtol, 1e-6)
    if len(got) != len(expected) or any(
            a.shape != b.shape or not torch.allclose(a.to(b.dtype), b, rtol=rtol, atol=rtol * 1e-2)
            for a, b in zip(got, expected, strict=False)):
        target.report("AGD009", detail="results differ from a Python loop over the batch")
