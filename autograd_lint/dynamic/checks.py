"""The dynamic checks of one Function (AGD001-AGD015). Runs in the worker.

In order: choose inputs (recorded calls, declared examples, synthesis:
`input_choice.py`), find the precision the Function computes in (the ladder
in `precision.py`), leave out the inputs backward returns None for on purpose
(AGD015 says whether the outputs depend on them: `none_gradients.py`), then
run the checks, each at that precision, and the boundary probes. A bool flag
is then flipped and the checks run again on that path, and an optional
tensor input left None is checked given (recorded calls may never pass it).

Each check returns findings as plain dicts (`code` plus the message fields of
the rule); a check whose own machinery fails reports nothing (precision
first), and a check that needs a working backward runs only when the basic
gradcheck passed, so one bug is reported once, by the most specific rule.
Which finding a failed probe becomes is decided in `verdicts.py`.

This module composes the probes, one module per family:

    forward_backward.py    AGD003-AGD007: one backward, its errors and side effects
    gradcheck.py           AGD001 (gradcheck), AGD010 (undefined incoming gradients)
    second_derivatives.py  AGD002 (gradgradcheck)
    mutation.py            AGD011 (inputs changed in place)
    boundaries.py          AGD001/AGD003 at the edges: no_grad, size-1 and odd sizes, strides
    partial_inputs.py      AGD012 (optional inputs left None), AGD013 (one input at a time)
    grad_layouts.py        AGD014 (expanded, narrow, transposed incoming gradients)
    transforms.py          AGD008 (forward AD), AGD009 (vmap)
    deliberate.py          gradients that differ from the derivative on purpose
    reference.py           AGD001 in half precision, against a declared reference
    compiled.py            AGD017 (eager against torch.compile, also for custom ops)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .boundaries import check_boundaries
from .compiled import compare_compiled
from .deliberate import deliberate_gradient
from .errors import CodeError, NotChecked, first_line
from .forward_backward import check_forward_backward
from .grad_layouts import check_noncontiguous_grad_output
from .gradcheck import GuessedValues, check_gradcheck, check_undefined_grad
from .input_choice import choose_inputs, forward_error
from .inputs import RECORDED, SYNTHESIZED, Inputs, differentiable_positions, short
from .isolation import PROBE_SECONDS, run_isolated
from .mutation import check_input_mutation
from .none_gradients import freeze_none_gradients
from .optional_inputs import given_candidates, optional_tensor_positions, robust
from .partial_inputs import check_optional_none, check_partial_requires_grad
from .precision import (
    FLOAT64,
    HALF,
    LADDER,
    SLOW_FORWARD_SECONDS,
    Precision,
    float32,
    settle_precision,
)
from .probing import differentiable_outputs, fresh, tensors_of
from .reach import lines_reached
from .reference import check_against_reference, reference_of
from .second_derivatives import check_gradgradcheck
from .target import Finding, Target
from .transforms import check_forward_ad, check_vmap

MAX_FLAG_PASSES = 3


def run_all(target: Target, calls: Iterable[dict[str, Any]] = ()) -> Inputs | None:
    """Every check; returns the inputs used (None: the code failed first)."""
    calls = list(calls)
    try:
        inputs = choose_inputs(target, calls)
        inputs = settle_precision(target, inputs)
    except CodeError as exc:
        target.report("AGD003", where=exc.where, detail=exc.detail)
        return None
    if target.precision.name in HALF.values():
        check_against_reference(target, inputs)
        return inputs
    try:
        with _reaching(target):
            check_inputs(target, inputs)
    except GuessedValues:
        inputs = _without_guessed_optionals(target, inputs)
        with _reaching(target):
            check_inputs(target, inputs)
    _compare_compiled(target, inputs)
    _flip_flags(target, inputs)
    _check_optional_given(target, inputs)
    return inputs


@contextmanager
def _reaching(target: Target) -> Iterator[None]:
    """The checks within it add the watched lines they reach to
    `target.reached` (not torch.compile's comparison: a trace function
    changes what dynamo does)."""
    path, lines = target.watch
    with lines_reached(path, set(lines)) as reached:
        try:
            yield
        finally:
            target.reached.update(reached)


# Findings that say the eager gradient is already wrong or missing: comparing
# the compiled one with it says nothing more.
_EAGER_BROKEN = frozenset({"AGD001", "AGD003", "AGD004"})


def _compare_compiled(target: Target, inputs: Inputs) -> None:
    """AGD017: eager against torch.compile(backend="aot_eager"), in a child
    process (compiling may take long), within the time left for extras."""
    if any(f["code"] in _EAGER_BROKEN for f in target.findings) or \
            not differentiable_positions(inputs.args):
        return
    seconds = min(PROBE_SECONDS, target.time_for_extras())
    if seconds > 0:
        run_isolated(target, lambda: compare_compiled(
            target, target.apply, lambda: fresh(inputs.args)), seconds)


def _without_guessed_optionals(target: Target, inputs: Inputs) -> Inputs:
    """The inputs with the optional ones synthesis gave left None, and the
    findings made with them forgotten (they may be about the made-up values)."""
    args = list(inputs.args)
    for index in inputs.none_defaults:
        args[index] = None
    target.findings.clear()
    target.deliberate = None
    return replace(inputs, args=tuple(args), none_defaults=[])


def _flip_flags(target: Target, inputs: Inputs) -> None:
    """The checks again with each bool flag flipped (the first few): the
    other path of `if flag:` is as much the Function as the one taken."""
    flags = inputs.flags if inputs.source == SYNTHESIZED else \
        [i for i, a in enumerate(inputs.args) if isinstance(a, bool)]
    for index in flags[:MAX_FLAG_PASSES]:
        value = inputs.args[index]
        if not isinstance(value, bool):
            continue
        flipped = inputs.with_arg(index, not value)
        note = f"with `{inputs.name(index)}={not value}`"
        if inputs.source == SYNTHESIZED:
            if forward_error(target, flipped) is None:
                _on_path(target, flipped, note)
            continue
        # The other value is our guess, not a call the project makes: an error
        # inside its backward may be about the guess; and it is an extra probe.
        flipped = replace(flipped, source=SYNTHESIZED)
        if not _extra_path(target, flipped, note):
            return


def _check_optional_given(target: Target, inputs: Inputs) -> None:
    """An optional tensor input the checked inputs leave None (every
    recorded call does, or synthesis found forward works only without it)
    is checked given too, shaped after the other inputs: a feature vector,
    then the first input's shape. Only the errors no guess explains count."""
    why = ", which the recorded calls leave None" if inputs.source == RECORDED else ""
    for index in optional_tensor_positions(target, inputs.args):
        for candidate in given_candidates(inputs, index):
            if target.time_for_extras() <= 0:
                return
            if _extra_path(target, candidate, f"with `{inputs.name(index)}` given{why}",
                           keep=robust):
                break


def _extra_path(target: Target, inputs: Inputs, note: str,
                keep: Callable[[Finding], bool] | None = None) -> bool:
    """An extra path, in a child process (an input made up for it may crash a
    kernel), within the time left for extras; its findings that `keep`
    accepts are added. True when forward took the inputs."""
    before = len(target.findings)
    accepted: list[bool] = []

    def probe() -> None:
        if forward_error(target, inputs) is None:
            accepted.append(True)
            _on_path(target, inputs, note)
        if not accepted:
            target.findings.append({"code": "__forward_refused__"})

    seconds = min(PROBE_SECONDS, target.time_for_extras())
    if seconds <= 0 or not run_isolated(target, probe, seconds):
        return False
    found = target.findings[before:]
    del target.findings[before:]
    if any(f["code"] == "__forward_refused__" for f in found):
        return False
    target.findings.extend(f for f in found if keep is None or keep(f))
    return True


def _on_path(target: Target, inputs: Inputs, note: str) -> None:
    target.note = note
    try:
        check_inputs(target, inputs)
    except (NotChecked, GuessedValues):
        pass  # nothing trustworthy to say about this path
    finally:
        target.note = ""


def check_inputs(target: Target, inputs: Inputs) -> None:
    """Every check on one set of inputs."""
    inputs = freeze_none_gradients(target, inputs)
    if not differentiable_positions(inputs.args):
        raise NotChecked("no floating-point tensor input whose gradient backward computes")
    check_input_mutation(target, inputs)
    target.probed.add("AGD011")
    backward_ok = check_forward_backward(target, inputs)
    if backward_ok:
        # Finite differences are no verdict on a gradient that differs from
        # the derivative on purpose (RULES.md): the probes that compare with
        # them are left out; the others still run.
        deliberate = deliberate_gradient(target, inputs)
        if deliberate is not None:
            target.deliberate = deliberate
        gradcheck_ok = deliberate is None and check_gradcheck(target, inputs)
        if deliberate is not None:
            check_noncontiguous_grad_output(target, inputs)
        if gradcheck_ok:
            if not target.once_differentiable:
                check_gradgradcheck(target, inputs)
            check_undefined_grad(target, inputs)
            check_partial_requires_grad(target, inputs)
            target.probed.update(("AGD010", "AGD013"))
            check_noncontiguous_grad_output(target, inputs)
            if not target.note:  # the default path's edges: bounded, once
                check_boundaries(target, inputs)
        check_optional_none(target, inputs)
    if target.has_jvp:
        check_forward_ad(target, inputs)
        target.probed.add("AGD008")
    if target.has_vmap:
        check_vmap(target, inputs)
        target.probed.add("AGD009")


# What this module held before the probes had modules of their own, still
# importable from here.
__all__ = [
    "FLOAT64", "HALF", "LADDER", "MAX_FLAG_PASSES", "SLOW_FORWARD_SECONDS", "CodeError",
    "Finding", "NotChecked", "Precision", "Target", "check_against_reference",
    "check_forward_ad", "check_forward_backward", "check_gradcheck", "check_gradgradcheck",
    "check_input_mutation", "check_inputs", "check_noncontiguous_grad_output",
    "check_optional_none", "check_partial_requires_grad", "check_undefined_grad", "check_vmap",
    "choose_inputs", "deliberate_gradient", "differentiable_outputs", "first_line", "float32",
    "freeze_none_gradients", "fresh", "reference_of", "run_all", "settle_precision", "short",
    "tensors_of",
]
