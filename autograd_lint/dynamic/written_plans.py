"""What a written test (`written_tests.py`) of one Function or custom op
does, found in the worker: the inputs the dynamic mode builds for it
(`input_choice.py`, `op_inputs.py`), the precision it computes in
(`precision.py`), and the check that fits that precision: gradcheck, at
float32's step and tolerances where it computes in float32, or against its
declared reference where it computes only in half precision
(`reference.py`).

The plan is plain JSON for the parent: the test's arguments as source
(`written_values.py`), built here again by the very helpers the test calls
(`written_template.py`) and run once, so that a test is written only with
arguments forward takes. What a written test cannot do (a gradient that
differs from the derivative on purpose, half precision without a
reference, an argument that cannot be written down) is a plan that skips,
with the reason; inputs that cannot be built at all raise `NotChecked`, as
in a check.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from . import REFERENCE_ATTRIBUTE
from .deliberate import deliberate_gradient
from .errors import CodeError, NotChecked, first_line
from .gradcheck import GuessedValues, check_gradcheck
from .input_choice import choose_inputs
from .inputs import SYNTHESIZED, Inputs, differentiable_positions, short
from .none_gradients import freeze_none_gradients
from .op_checks import opcheck_tests
from .op_inputs import choose_op_inputs, repeats, with_grad
from .precision import HALF, Precision, settle_precision
from .probing import first_forward, fresh, tensors_of, unit_backward
from .reference import reference_of
from .target import Target
from .written_template import BUILDERS
from .written_values import Unwritable, ValueWriter

Plan = dict[str, Any]
# How far a half-precision result may be from the reference's (reference.py).
HALF_TOLERANCE = {"bfloat16": 3e-2, "float16": 5e-3}


def plan_function(target: Target, calls: list[dict[str, Any]]) -> Plan:
    """The test of a Function class."""
    try:
        inputs = choose_inputs(target, calls)
        inputs = settle_precision(target, inputs)
    except CodeError as exc:
        raise _broken(exc) from None
    return _plan(target, inputs)


def plan_op(target: Target, op: Any, calls: list[dict[str, Any]], has_autograd: bool,
            traceable: bool) -> Plan:
    """The test of a custom op, called through the dispatcher: its gradients
    (with an autograd formula registered), then `torch.library.opcheck`
    with the tests the dynamic mode runs on it (`op_checks.py`)."""
    try:
        chosen = choose_op_inputs(target, op, calls, ask_fake=traceable)
        inputs = settle_precision(target, with_grad(chosen)) if has_autograd else chosen
    except CodeError as exc:
        raise _broken(exc) from None
    plan = _plan(target, inputs) if has_autograd else _opcheck_plan(target, inputs)
    if "skip" not in plan:
        tests = opcheck_tests(not repeats(target, chosen), traceable)
        plan["opcheck"] = list(tests) if tests is not None else None
        namespace, _, name = op._schema.name.partition("::")
        plan["op"] = [namespace, name, op._overloadname]
    return plan


def _opcheck_plan(target: Target, inputs: Inputs) -> Plan:
    """An op without an autograd formula: opcheck alone."""
    try:
        arguments, imports = written_arguments(target, inputs)
    except Unwritable as exc:
        return _skip(f"its inputs cannot be written as code: {exc}")
    return {"kind": "opcheck", "arguments": arguments, "imports": imports,
            "describe": _describe(inputs), "precision": target.precision.describe(),
            "check": "opcheck (no autograd formula is registered: no gradients to check)",
            "reason": ""}


def _broken(exc: CodeError) -> NotChecked:
    return NotChecked(f"{exc.where} raises {exc.detail} on every input tried (a defect: "
                      "`autograd-lint check --dynamic` reports it as AGD003)")


def _skip(reason: str) -> Plan:
    return {"skip": reason}


def _plan(target: Target, inputs: Inputs) -> Plan:
    """The check at the precision settled: half precision against the
    reference, the rest by gradcheck (as `checks.run_all` decides)."""
    precision = target.precision
    if precision.name in HALF.values():
        return _half_plan(target, inputs, precision)
    inputs = freeze_none_gradients(target, inputs)
    if not differentiable_positions(inputs.args):
        return _skip("no floating-point tensor input whose gradient backward computes")
    deliberate = deliberate_gradient(target, inputs)
    if deliberate is not None:
        return _skip(f"its gradient differs from the derivative on purpose ({deliberate}): "
                     "finite differences are no verdict on it")
    inputs = _without_misleading_guesses(target, inputs)
    try:
        arguments, imports = written_arguments(target, inputs)
    except Unwritable as exc:
        return _skip(f"its inputs cannot be written as code: {exc}")
    float64 = precision.name == "float64"
    return {"kind": "gradcheck", "arguments": arguments, "imports": imports,
            "clone_inputs": target.copy_leaves, "describe": _describe(inputs),
            "precision": precision.describe(),
            "check": "gradcheck in float64" if float64 else
            "gradcheck at float32's step and tolerances",
            "reason": "" if float64 else f"It {precision.note.removeprefix('it ')}: "
            "gradcheck with a finite-difference step and tolerances calibrated to float32.",
            "tolerances": _tolerances(target)}


def _half_plan(target: Target, inputs: Inputs, precision: Precision) -> Plan:
    """Half precision: the outputs and gradients against the declared
    reference in float64 (`reference.py`)."""
    reference = reference_of(target.cls)
    if reference is None:
        return _skip(f"it computes only in {precision.name} ({precision.note}), where finite "
                     "differences say nothing, and declares no reference implementation (a "
                     "`reference` staticmethod taking forward's inputs, or "
                     "`@example_inputs(..., reference=fn)`) to check it against")
    attribute = REFERENCE_ATTRIBUTE if callable(getattr(target.cls, REFERENCE_ATTRIBUTE, None)) \
        else "reference"
    try:
        arguments, imports = written_arguments(target, inputs)
    except Unwritable as exc:
        return _skip(f"its inputs cannot be written as code: {exc}")
    return {"kind": "reference", "arguments": arguments, "imports": imports,
            "reference": attribute, "tolerance": HALF_TOLERANCE[precision.name],
            "describe": _describe(inputs), "precision": precision.describe(),
            "check": f"{precision.name} against its reference implementation in float64",
            "reason": f"It computes only in {precision.name} ({precision.note}), where "
                      "finite differences say nothing: its outputs and gradients are "
                      "compared with its reference implementation's in float64."}


def _without_misleading_guesses(target: Target, inputs: Inputs) -> Inputs:
    """Synthesized optional inputs whose made-up values alone make gradcheck
    disagree (a `precomputed_lse` that is no logsumexp of the logits) are
    left None, as the dynamic mode's checks leave them."""
    if inputs.source != SYNTHESIZED or not inputs.none_defaults:
        return inputs
    findings = len(target.findings)
    try:
        check_gradcheck(target, inputs)
    except GuessedValues:
        args = list(inputs.args)
        for index in inputs.none_defaults:
            args[index] = None
        return replace(inputs, args=tuple(args), none_defaults=[])
    finally:
        del target.findings[findings:]
    return inputs


def _describe(inputs: Inputs) -> str:
    """"synthesized inputs x=float64[3, 4], params=Params": a bundle by its
    class, not its repr."""
    shown = [f"{inputs.name(i)}={short(value) if _plain(value) else type(value).__name__}"
             for i, value in enumerate(inputs.args)]
    return f"{inputs.source} inputs " + ", ".join(shown) if shown else f"{inputs.source} inputs"


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (torch.Tensor, bool, int, float, str, list,
                                               torch.dtype)) or \
        (type(value) is tuple)


def _tolerances(target: Target) -> dict[str, Any]:
    precision = target.precision
    tolerances: dict[str, Any] = {"eps": _number(precision.eps), "atol": _number(precision.atol),
                                  "rtol": _number(precision.rtol),
                                  "nondet_tol": _number(precision.nondet_tol)}
    if target.fast:
        tolerances["fast_mode"] = True  # a slow (interpreted) forward: random projections
    return tolerances


def _number(value: float) -> float:
    return float(f"{value:.4g}")


def written_arguments(target: Target, inputs: Inputs) -> tuple[list[list[str]], list[str]]:
    """[[name, source], ...] of the test's arguments and the imports they
    need: drawn from their ranges where forward takes what is drawn as it
    takes the chosen inputs, else by their values."""
    expected = _refusal(target, inputs.args)
    last = ""
    for exact in (False, True):
        writer = ValueWriter(target.device, exact=exact)
        arguments = [[inputs.name(i), writer.write(value, inputs.name(i))]
                     for i, value in enumerate(inputs.args)]
        imports = sorted(writer.imports)
        try:
            built = build_arguments(arguments, imports, target.device)
        except Exception as exc:
            raise Unwritable(f"building them again raised {first_line(exc)}") from None
        refusal = _refusal(target, built)
        if refusal is None or expected is not None:
            return arguments, imports
        last = refusal
    raise Unwritable(f"built again from their shapes and values, forward or backward "
                     f"refuses them ({last})")


def build_arguments(arguments: list[list[str]], imports: list[str],
                    device: torch.device) -> tuple[Any, ...]:
    """The arguments as the written test builds them, with its own helpers."""
    namespace: dict[str, Any] = {"torch": torch, "DEVICE": device}
    for source in BUILDERS.values():
        exec(source, namespace)  # our own template: the test's helpers
    for line in imports:
        exec(line, namespace)  # `from module import Class`, as the test does
    items = ", ".join(source for _, source in arguments)
    return tuple(eval(f"({items},)", namespace))  # the test's own argument list


def _refusal(target: Target, args: tuple[Any, ...]) -> str | None:
    """Why forward (with finite outputs) or a backward with unit gradients
    fails on the arguments; None when both take them."""
    try:
        output = first_forward(target, args)
        if not all(bool(torch.isfinite(t).all()) for t in tensors_of(output)
                   if t.is_floating_point()):
            return "non-finite outputs"
        if differentiable_positions(args):
            unit_backward(target, fresh(args))
    except Exception as exc:
        return first_line(exc)
    return None
