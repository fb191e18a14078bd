"""Optional tensor inputs the recorded calls never give (`bias=None` in
every test): the path that uses them is checked too, with a tensor shaped
after the recorded inputs.

That tensor's shape is a guess, and a wrong guess makes other gradients
wrong too (a made-up `dt_bias` of the wrong length): of what the checks find
on that path, only the errors no values explain are kept (`robust`).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import torch

from .errors import Unsynthesizable
from .inputs import SYNTHESIZED, Inputs, Synthesis
from .target import Finding, Target


def optional_tensor_positions(target: Target, args: tuple[Any, ...]) -> list[int]:
    """Positions of the optional tensor inputs synthesis would give a tensor
    first (a `bias`, a `residual`: not offsets, states or output buffers,
    where None is the usual call), that are None in `args`."""
    try:
        synthesis = Synthesis(target.cls, target.device, target.tensor_hints)
    except Unsynthesizable:
        return []
    return [i for i, p in enumerate(synthesis.parameters)
            if i < len(args) and args[i] is None and p.optional and not p.none_first]


def given_candidates(recorded: Inputs, index: int) -> Iterator[Inputs]:
    """The recorded inputs with a tensor at `index`: one value per feature of
    the first floating input, then that input's whole shape. The tensor is
    our guess, so the inputs count as synthesized (an error inside backward
    may be about it)."""
    reference = next((a for a in recorded.args if isinstance(a, torch.Tensor)
                      and a.is_floating_point()), None)
    if reference is None or reference.dim() == 0:
        return
    generator = torch.Generator().manual_seed(23 + index)
    for shape in (reference.shape[-1:], reference.shape):
        values = torch.rand(tuple(shape), generator=generator, dtype=torch.float64) + 0.5
        given = values.to(dtype=reference.dtype, device=reference.device).requires_grad_(True)
        yield replace(recorded.with_arg(index, given), source=SYNTHESIZED,
                      none_defaults=[index])


# Errors no choice of values or shapes causes: backward reading a ctx
# attribute forward did not set on this path, a name left unbound, a wrong
# number or kind of gradients returned.
_VALUE_INDEPENDENT = re.compile(r"'\w+Backward' object has no attribute|UnboundLocalError|"
                                r"NameError|incorrect number of gradients|"
                                r"expected Variable or None")


def robust(finding: Finding) -> bool:
    """Whether a finding made with a guessed optional input stands whatever
    the guess."""
    return finding.get("code") == "AGD003" and \
        _VALUE_INDEPENDENT.search(str(finding.get("detail", ""))) is not None
