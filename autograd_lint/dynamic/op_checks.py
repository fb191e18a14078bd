"""The dynamic checks of one custom op (AGD016, AGD014, AGD017). Runs in the worker.

`torch.library.opcheck` runs on the op's inputs (`op_inputs.py`: recorded
calls, else synthesized), then on variants of them the op also takes:
inputs that require grad (ops with an autograd formula: without one, a
backward is not the op's to support) and non-contiguous inputs of the same
values. Each failing opcheck test is reported once (AGD016), with the inputs
it failed on; a test that fails for a reason of this machine is no verdict.
An op with an autograd formula then gets the incoming gradients autograd
really hands its backward (expanded, a narrow view, transposed: AGD014,
`grad_layouts.py`; opcheck feeds contiguous ones only), unless it is random
or opcheck found its registration wrong, and is compared eagerly and
compiled (AGD017, `compiled.py`), unless opcheck's own compiled test failed
already.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from .compiled import compare_compiled
from .errors import environmental, first_line
from .grad_layouts import check_noncontiguous_grad_output
from .inputs import Inputs
from .op_inputs import choose_op_inputs, copies, op_error, repeats, with_grad
from .precision import FLOAT64, Precision, dtype_of, float32
from .probing import map_tensors, tensors_in, tensors_of, transposed_in_memory
from .target import Target

COMPILED_TEST = "test_aot_dispatch_dynamic"


def run_op_checks(target: Target, op: Any, calls: list[dict[str, Any]],
                  has_autograd: bool, fake_is_impl: bool = False) -> Inputs:
    """Every check of one op; returns the inputs used. `fake_is_impl`: the
    op's implementation is its fake too (a triton_op, traced through its
    kernels), which Triton's interpreter on a CPU cannot trace."""
    traceable = not (fake_is_impl and target.emulated())
    inputs = choose_op_inputs(target, op, calls, ask_fake=traceable)
    target.precision = _precision(inputs)
    variants = [("", inputs)]
    if has_autograd:
        variants.append((", requiring grad", with_grad(inputs)))
    strided = _non_contiguous(inputs)
    if strided is not None:
        variants.append((", non-contiguous", strided))
    random = not repeats(target, inputs)
    tests = opcheck_tests(random, traceable)
    failed: set[str] = set()
    reported: set[str] = set()  # one cause failing several tests is said once
    unrunnable: list[str] = []
    for label, variant in variants:
        if variant is not inputs and _refused(target, variant):
            continue  # the op refuses these inputs loudly: its callers see that
        for test, message in _opcheck(op, variant, tests):
            if test in failed or (variant is strided and "Stride mismatch" in message):
                # A layout no caller passed: only strides that follow it are
                # wrong, which harms nobody until a caller passes one.
                continue
            if environmental(message):
                unrunnable.append(f"`{test}` ({message})")
                continue
            failed.add(test)
            if message not in reported:
                reported.add(message)
                target.report("AGD016", test=f"`{test}`", on=f"{variant.describe()}{label}",
                              detail=message)
    if unrunnable and not failed:
        target.report("AGD900", reason=f"opcheck could not run {unrunnable[0]} on this machine")
    if has_autograd and not random and "test_autograd_registration" not in failed:
        check_noncontiguous_grad_output(target, with_grad(inputs))
    if has_autograd and traceable and COMPILED_TEST not in failed:
        grad_inputs = with_grad(inputs)
        compare_compiled(target, lambda *args: op(*args), lambda: copies(grad_inputs.args))
    return inputs


# A random op's outputs differ from call to call: its compiled run too.
_TESTS_OF_A_RANDOM_OP = ("test_schema", "test_autograd_registration", "test_faketensor")
# The tests that run the op eagerly only.
_UNTRACED_TESTS = ("test_schema", "test_autograd_registration")


def opcheck_tests(random: bool, traceable: bool) -> tuple[str, ...] | None:
    """The opcheck tests an op's outputs allow (None: all of them): a random
    op's compiled run differs from its eager one; an op only Triton's
    interpreter runs cannot be traced at all."""
    if not traceable:
        return _UNTRACED_TESTS
    return _TESTS_OF_A_RANDOM_OP if random else None


def _opcheck(op: Any, inputs: Inputs, tests: tuple[str, ...] | None
             ) -> list[tuple[str, str]]:
    """(test, first line of its error) for each failing opcheck test."""
    kwargs: dict[str, Any] = {"raise_exception": False}
    if tests is not None:
        kwargs["test_utils"] = tests
    try:
        results = torch.library.opcheck(op, copies(inputs.args), **kwargs)
    except Exception as exc:  # opcheck's own machinery: no verdict on the op
        return [("opcheck", f"not run: {first_line(exc)}")] if environmental(str(exc)) else []
    return [(test, first_line(outcome)) for test, outcome in results.items()
            if isinstance(outcome, BaseException)]


def _refused(target: Target, inputs: Inputs) -> bool:
    """Whether the op (and, for inputs that require grad, its backward)
    raises on them eagerly: a backward that needs state the check has not
    set up (a process group) is no verdict on the registration."""
    if op_error(target, inputs) is not None:
        return True
    args = copies(inputs.args)
    try:
        outputs = [t for t in tensors_of(target.apply(*args)) if t.requires_grad]
        if outputs:
            torch.autograd.grad([t.sum() for t in outputs],
                                [t for t in tensors_in(args) if t.requires_grad],
                                allow_unused=True)
    except Exception:
        return True
    return False


def _non_contiguous(inputs: Inputs) -> Inputs | None:
    """The same values, each tensor of two or more dimensions transposed in memory."""
    def transposable(tensor: torch.Tensor) -> bool:
        return tensor.dim() >= 2 and tensor.shape[-1] > 1 and tensor.shape[-2] > 1

    if not any(transposable(t) for t in tensors_in(inputs.args)):
        return None
    return replace(inputs, args=map_tensors(inputs.args, lambda t: transposed_in_memory(t)
                                            if transposable(t) else t))


def _precision(inputs: Inputs) -> Precision:
    dtype = dtype_of(inputs)
    return FLOAT64 if dtype == torch.float64 else float32(dtype, "the op's inputs")
