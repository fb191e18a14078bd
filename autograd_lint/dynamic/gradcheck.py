"""gradcheck at the Function's precision (AGD001), and with undefined
incoming gradients (AGD010); the other gradcheck-based probes call
`run_gradcheck` too."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from .errors import first_line
from .inputs import Inputs
from .probing import fresh
from .target import Target
from .verdicts import gradcheck_failure


def run_gradcheck(target: Target, args: tuple[Any, ...], **options: Any) -> None:
    precision = target.precision
    settings = {"eps": precision.eps, "atol": precision.atol, "rtol": precision.rtol,
                "nondet_tol": precision.nondet_tol, "raise_exception": True,
                "check_undefined_grad": False, "check_batched_grad": False,
                "fast_mode": target.fast}
    settings.update(options)
    with fast_failures(target):
        torch.autograd.gradcheck(target.tensor_outputs, args, **settings)


@contextmanager
def fast_failures(target: Target) -> Iterator[None]:
    """In fast mode, a mismatch makes torch rerun the slow mode only to word
    its error (minutes for an interpreted kernel); `worst_error` says where
    the mismatch is instead."""
    import sys

    # (`torch.autograd.gradcheck` is the function: the module is in sys.modules.)
    module = sys.modules["torch.autograd.gradcheck"]
    original = getattr(module, "_run_slow_mode_and_get_error", None)
    if not target.fast or original is None:
        yield
        return
    module._run_slow_mode_and_get_error = lambda *args, **kwargs: \
        "Jacobian mismatch (a random projection of it)"
    try:
        yield
    finally:
        module._run_slow_mode_and_get_error = original


class GuessedValues(Exception):
    """gradcheck fails only because of a value synthesis made up for an
    optional input (a `precomputed_lse` that is no logsumexp of the logits):
    the inputs are to be checked with those inputs left None."""


def check_gradcheck(target: Target, inputs: Inputs) -> bool:
    """AGD001."""
    try:
        run_gradcheck(target, fresh(inputs.args))
    except Exception as exc:
        if isinstance(exc, GradcheckError) and _guessed_optional_explains(target, inputs):
            raise GuessedValues from None
        gradcheck_failure(target, inputs, exc, "AGD001")
        return False
    return True


def _guessed_optional_explains(target: Target, inputs: Inputs) -> bool:
    """With synthesized optional inputs given, whether the mismatch goes
    away when they are left None while their own gradients (if any) agree:
    the made-up value, not the code, is then what disagrees."""
    if inputs.trusted or not inputs.none_defaults:
        return False
    optional = {i for i in inputs.none_defaults
                if isinstance(inputs.args[i], torch.Tensor) and inputs.args[i].requires_grad}
    try:
        if optional:
            run_gradcheck(target, fresh(inputs.args, requires=optional))
        args = list(fresh(inputs.args))
        for index in inputs.none_defaults:
            args[index] = None
        run_gradcheck(target, tuple(args))
    except Exception:
        return False
    return True


def check_undefined_grad(target: Target, inputs: Inputs) -> None:
    """AGD010."""
    try:
        run_gradcheck(target, fresh(inputs.args), check_undefined_grad=True)
    except Exception as exc:
        target.report("AGD010", detail=first_line(exc))
