"""The dynamic checks of one Function (AGD001-AGD015). Runs in the worker.

In order: choose inputs (recorded calls, declared examples, synthesis), find
the precision the Function computes in (the ladder below), leave out the
inputs backward returns None for on purpose (AGD015 says whether the outputs
depend on them), then run the checks, each at that precision. A synthesized
bool flag is then flipped and the checks run again on that path.

Precision ladder: float64 inputs first. A Function that keeps float64 is
gradchecked as PyTorch does. One whose outputs do not change when its inputs
are rounded to float32 computes in float32 (a Triton or CUDA kernel loading
float32): it is checked with a step and tolerances calibrated to float32.
One that refuses float64 but takes float32 likewise; one that only takes
bfloat16/float16 is compared with a declared reference implementation.

Each check returns findings as plain dicts (`code` plus the message fields of
the rule); a check whose own machinery fails reports nothing (precision
first), and a check that needs a working backward runs only when the basic
gradcheck passed, so one bug is reported once, by the most specific rule.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from .inputs import (
    RECORDED,
    Inputs,
    Synthesis,
    Unsynthesizable,
    declared,
    differentiable_positions,
    float_tensor,
    recorded,
    short,
    tensor_role,
    uses_setup_context,
)

Finding = dict[str, Any]
MAX_FLAG_PASSES = 3
SLOW_FORWARD_SECONDS = 0.02


class NotChecked(Exception):
    """The Function could not be checked (AGD900); the message says why."""


class CodeError(Exception):
    """forward or backward failed whatever the inputs: a finding (AGD003)."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(detail)
        self.where = where
        self.detail = detail


@dataclass(frozen=True)
class Precision:
    """What a Function computes in, and how finely it can be checked there."""

    name: str  # float64 | float32 | bfloat16 | float16
    dtype: torch.dtype  # the inputs' dtype
    note: str = ""
    eps: float = 1e-6  # finite-difference step
    atol: float = 1e-5
    rtol: float = 1e-3
    nondet_tol: float = 1e-10  # differences between two identical backward calls
    close_rtol: float = 1e-7  # two computations of the same values (layouts, vmap)

    def describe(self) -> str:
        return f"{self.name} ({self.note})" if self.note else self.name

    def scaled(self, magnitude: float) -> Precision:
        """atol for outputs of this size: rounding noise grows with them."""
        if self.name == "float64" or magnitude <= 1:
            return self
        return Precision(self.name, self.dtype, self.note, self.eps, self.atol * magnitude,
                         self.rtol, self.nondet_tol * magnitude, self.close_rtol)


FLOAT64 = Precision("float64", torch.float64)


def float32(dtype: torch.dtype, note: str) -> Precision:
    return Precision("float32", dtype, note, eps=1e-3, atol=2e-3, rtol=1e-2, nondet_tol=1e-5,
                     close_rtol=1e-5)


HALF = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
LADDER = (torch.float64, torch.float32, torch.bfloat16, torch.float16)
_DTYPE_WORDS = re.compile(r"bf16|bfloat16|fp16|float16|half|fp32|float32|\bfloat\b|Float\b|"
                          r"Double|float64|dtype|scalar type", re.I)


@dataclass
class Target:
    cls: type
    once_differentiable: bool
    has_jvp: bool
    has_vmap: bool
    device: torch.device
    legacy: bool = False
    tensor_hints: frozenset[str] = frozenset()
    precision: Precision = FLOAT64
    findings: list[Finding] = field(default_factory=list)
    note: str = ""  # which path a finding is on: "with `flag=True`"
    # forward is slow (an interpreted kernel): gradchecks use random
    # projections of the Jacobian (a few calls per input, not per element).
    fast: bool = False
    # An in-place Function (mark_dirty) cannot take a leaf that requires grad:
    # it gets a differentiable copy of each input, as a caller would pass.
    copy_leaves: bool = False
    # Why backward differs from the derivative on purpose ("identity",
    # "piecewise-constant"): finite differences were not compared.
    deliberate: str | None = None

    def report(self, code: str, **fields: Any) -> None:
        if any(isinstance(v, str) and v.startswith("MemoryError") for v in fields.values()):
            raise MemoryError  # the worker's limit, not the code: not checked (AGD900)
        if self.note:
            if any(f["code"] == code for f in self.findings):
                return  # the same defect, seen on the default path already
            fields["note"] = self.note
        if code in ("AGD001", "AGD002"):
            fields.setdefault("precision", self.precision.describe())
        self.findings.append({"code": code, **fields})

    def apply(self, *args: Any) -> Any:
        if self.copy_leaves:  # every tensor: the caller's must never change
            args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        return self.cls.apply(*args)

    def tensor_outputs(self, *args: Any) -> Any:
        """`apply` with non-tensor outputs dropped (gradcheck takes tensors only)."""
        output = self.apply(*args)
        if isinstance(output, (tuple, list)):
            return tuple(t for t in output if isinstance(t, torch.Tensor))
        return output


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if not text and isinstance(exc, AssertionError):
        return f"AssertionError: {_failed_assertion(exc)}"
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def _failed_assertion(exc: BaseException) -> str:
    """`assert x.is_cuda` (mlp.py:652): a bare assertion says nothing; its line does."""
    import linecache
    import os

    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return "(no message)"
    code = frame.tb_frame.f_code
    line = linecache.getline(code.co_filename, frame.tb_lineno).strip()
    return f"`{line}` ({os.path.basename(code.co_filename)}:{frame.tb_lineno})"


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


def _unit_backward(target: Target, args: tuple[Any, ...]
                   ) -> tuple[list[torch.Tensor], list[int], tuple[torch.Tensor | None, ...]]:
    """forward on `args`, then backward with incoming gradients of ones:
    (differentiable outputs, differentiable input positions, their gradients)."""
    outputs = differentiable_outputs(target.apply(*args))
    positions = differentiable_positions(args)
    grads = torch.autograd.grad(outputs, [args[i] for i in positions],
                                [torch.ones_like(o) for o in outputs], allow_unused=True)
    return outputs, positions, grads


def _floating_outputs(target: Target, args: tuple[Any, ...] | list[Any]) -> list[torch.Tensor]:
    """forward's real floating-point outputs, without a graph (probes of forward alone)."""
    with torch.no_grad():
        return [t.detach() for t in tensors_of(target.apply(*args)) if t.is_floating_point()]


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------
def choose_inputs(target: Target, calls: Iterable[dict[str, Any]] = ()) -> Inputs:
    """Recorded calls first, then declared examples, then synthesis."""
    if target.legacy:
        _legacy(target)
    for source in (recorded(target.cls, list(calls), target.device) if calls else None,
                   declared(target.cls, target.device)):
        if source is None:
            continue
        if not source:
            raise NotChecked("gradcheck_inputs returned no examples")
        for candidate in source:
            if _forward_error(target, candidate) is None:
                return candidate
        return source[0]  # forward fails with the project's own inputs: a finding
    return _synthesize(target)


def _legacy(target: Target) -> None:
    """A legacy Function (forward an instance method) is called as legacy
    code calls it, `Fn(...)(x)`: PyTorch refuses that, which is the finding."""
    try:
        instance = target.cls.__new__(target.cls)
        instance()
    except Exception as exc:
        raise CodeError("forward", f"{first_line(exc)} (a legacy Function: forward is an "
                                   "instance method, configured in `__init__`)") from None


def _forward_error(target: Target, candidate: Inputs) -> str | None:
    try:
        _first_forward(target, candidate.args)
    except Exception as exc:
        return first_line(exc)
    return None


def _synthesize(target: Target) -> Inputs:
    try:
        synthesis = Synthesis(target.cls, target.device, target.tensor_hints)
    except Unsynthesizable as exc:
        raise NotChecked(f"cannot synthesize inputs: {exc}; declare them with "
                         "`@example_inputs(...)`, a `gradcheck_inputs` staticmethod, or "
                         "record the project's own calls (`pytest --autograd-record`)") from None
    errors: list[str] = []
    fallback: Inputs | None = None  # forward works, backward does not
    narrow: Inputs | None = None  # works, but only in half precision
    try:
        for candidate in synthesis:
            accepted, error = _accept(target, candidate, synthesis)
            if error is None and accepted is not None and _half(accepted):
                narrow = narrow or accepted  # a flag may open a wider path: look on
                continue
            if error is None:
                return accepted
            if accepted is not None and fallback is None:
                fallback = accepted
            errors.append(error)
            synthesis.learn(error)
    except Unsynthesizable as exc:
        raise NotChecked(f"cannot synthesize inputs: {exc}") from None
    if narrow is not None or fallback is not None:
        return narrow or fallback  # type: ignore[return-value]
    last = errors[-1] if errors else "forward takes no inputs that can be synthesized"
    raise NotChecked(f"could not build inputs forward accepts (last try: {last}); declare "
                     "them with `@example_inputs(...)`, a `gradcheck_inputs` staticmethod, or "
                     "record the project's own calls (`pytest --autograd-record`)")


def _accept(target: Target, candidate: Inputs, synthesis: Synthesis | None = None
            ) -> tuple[Inputs | None, str | None]:
    """(inputs, None) when forward and backward both take the candidate;
    (inputs, error) when only forward does; (None, error) when neither.
    `synthesis` learns from forward's failing statement."""
    output, candidate, error = _forward_on_ladder(target, candidate, synthesis)
    if error is not None:
        return None, error
    backward = _backward_error(target, candidate)
    if backward is not None and _DTYPE_WORDS.search(backward):
        # forward takes this dtype but backward does not (a dtype table in
        # the kernel launcher): the next one down.
        for dtype in LADDER[LADDER.index(_dtype_of(candidate)) + 1:]:
            narrower = candidate.with_dtype(dtype)
            if _forward_error(target, narrower) is None and \
                    _backward_error(target, narrower) is None:
                candidate = narrower
                output = _first_forward(target, candidate.args)
                break
    outputs = differentiable_outputs(output)
    if not outputs:
        return None, "no output requires grad"
    if any(t.numel() == 0 for t in tensors_of(output)):
        return None, "an output is empty (a slice of a dimension too small?)"
    if not all(bool(torch.isfinite(t).all()) for t in tensors_of(output)
               if t.is_floating_point()):
        return None, "non-finite outputs"
    tensors = sum(isinstance(a, torch.Tensor) for a in candidate.args)
    for _ in range(tensors + 1):  # backward may say which shape an input should have
        error = _backward_error(target, candidate)
        fix = _shape_fix(error) if error else None
        if fix is None:
            if error is None and not _repeatable(target, candidate):
                return None, "identical calls give different results (memory a kernel " \
                             "leaves unwritten for this shape?)"
            return candidate, error
        index, shape = fix
        if not (0 <= index < len(candidate.args)) or \
                not _ignores_excess(target, candidate, index, shape):
            return candidate, error  # a wrong gradient shape is a finding (AGD004)
        fixed = candidate.with_arg(index, float_tensor(shape, index, target.device).to(
            candidate.args[index].dtype))
        if _forward_error(target, fixed) is not None:
            return candidate, error
        candidate = fixed
    return candidate, None


def _dtype_of(inputs: Inputs) -> torch.dtype:
    return next((a.dtype for a in inputs.args if isinstance(a, torch.Tensor) and
                 a.dtype in LADDER), torch.float64)


def _half(inputs: Inputs) -> bool:
    return any(isinstance(a, torch.Tensor) and a.dtype in HALF for a in inputs.args)


def _repeatable(target: Target, candidate: Inputs) -> bool:
    """Whether forward and backward give the same results twice: a guessed
    shape a kernel does not fully cover leaves `torch.empty` memory in them."""
    def run() -> list[torch.Tensor]:
        outputs, _, grads = _unit_backward(target, fresh(candidate.args))
        return [t.detach() for t in (*outputs, *grads) if t is not None]

    try:
        first, second = run(), run()
    except Exception:
        return True  # not this probe's to judge
    return len(first) == len(second) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second, strict=True))


def _ignores_excess(target: Target, candidate: Inputs, index: int,
                    shape: tuple[int, ...]) -> bool:
    """Whether forward reads only the first elements of a guessed input, as
    many as backward's gradient has: the input was guessed too large (a
    kernel reading `w[:4]` of a `w[3, 4]`). Otherwise backward's shape is the
    defect, not the guess."""
    tensor = candidate.args[index]
    wanted = 1
    for n in shape:
        wanted *= n
    if not isinstance(tensor, torch.Tensor) or not 0 < wanted < tensor.numel():
        return False
    changed = tensor.detach().clone()
    changed.reshape(-1)[wanted:] += 1.0
    try:
        with torch.no_grad():
            before = tensors_of(target.apply(*fresh(candidate.args)))
            after = tensors_of(target.apply(*fresh(candidate.with_arg(index, changed).args)))
    except Exception:
        return False
    return len(before) == len(after) and all(
        a.shape == b.shape and torch.equal(a, b) for a, b in zip(before, after, strict=True))


def _forward_on_ladder(target: Target, candidate: Inputs, synthesis: Synthesis | None = None
                       ) -> tuple[Any, Inputs, str | None]:
    """forward with the candidate, moving down the dtypes while forward's
    complaint is about the dtype."""
    error = None
    for dtype in LADDER:
        trial = candidate if dtype == torch.float64 else candidate.with_dtype(dtype)
        try:
            return _first_forward(target, trial.args), trial, None
        except Exception as exc:
            _raise_if_code_error(exc, "forward")
            error = first_line(exc)
            if not _DTYPE_WORDS.search(str(exc)):
                if synthesis is not None:
                    synthesis.learn_from(exc, trial)
                break
    return None, candidate, error


def _backward_error(target: Target, candidate: Inputs) -> str | None:
    try:
        _unit_backward(target, fresh(candidate.args))
    except Exception as exc:
        return first_line(exc)
    return None


_SHAPE_ERROR = "returned an invalid gradient at index"
_GOT_SHAPE = re.compile(r"invalid gradient at index (\d+) - got \[([\d, ]*)\] but expected shape")


def _shape_fix(error: str) -> tuple[int, tuple[int, ...]] | None:
    """From "... at index 1 - got [4] but expected shape compatible with [3, 4]":
    the Function's backward says input 1 is 4 long."""
    match = _GOT_SHAPE.search(error)
    if match is None:
        return None
    shape = tuple(int(n) for n in match.group(2).replace(" ", "").split(",") if n)
    return int(match.group(1)), shape


def _raise_if_code_error(exc: BaseException, where: str) -> None:
    """Errors no choice of inputs causes: reading a ctx attribute nothing set
    (state kept on the instance by legacy code)."""
    if isinstance(exc, AttributeError) and re.search(r"'\w+Backward' object has no attribute",
                                                     str(exc)):
        raise CodeError(where, first_line(exc)) from None


def _first_forward(target: Target, args: tuple[Any, ...]) -> Any:
    """forward on fresh copies of `args`. An in-place Function (mark_dirty)
    rejects leaves that require grad: it then gets copies, as its callers pass."""
    try:
        return target.apply(*fresh(args))
    except RuntimeError as exc:
        if "leaf Variable that requires grad" not in str(exc) or target.copy_leaves:
            raise
    target.copy_leaves = True
    return target.apply(*fresh(args))


# ---------------------------------------------------------------------------
# Precision
# ---------------------------------------------------------------------------
def settle_precision(target: Target, inputs: Inputs) -> Inputs:
    """Set `target.precision` and return the inputs in its dtype."""
    last: Exception | None = None
    for dtype in LADDER[LADDER.index(_dtype_of(inputs)):]:
        trial = inputs.with_dtype(dtype)
        try:
            started = time.perf_counter()
            output = _first_forward(target, trial.args)
            target.fast = time.perf_counter() - started > SLOW_FORWARD_SECONDS
        except Exception as exc:
            _raise_if_code_error(exc, "forward")
            last = exc
            continue
        if dtype == torch.float64:
            target.precision = _effective_precision(target, trial, output)
        elif dtype == torch.float32:
            target.precision = float32(dtype, "it does not run in float64")
        else:
            target.precision = Precision(HALF[dtype], dtype, "forward takes nothing wider")
        magnitude = max((float(t.detach().abs().max()) for t in tensors_of(output)
                         if t.is_floating_point() and t.numel()), default=1.0)
        target.precision = target.precision.scaled(magnitude)
        return trial
    if inputs.trusted and last is not None:
        raise CodeError("forward", f"{first_line(last)} (with {inputs.describe()})")
    raise NotChecked(f"forward raised {first_line(last)} with {inputs.describe()}"
                     if last else "forward cannot be run")


def _effective_precision(target: Target, inputs: Inputs, output: Any) -> Precision:
    """float64, unless forward ignores changes to its inputs that only float64
    can hold: it computes narrower (a kernel that loads float32), wholly or in
    part. The probe looks at forward alone, so a wrong backward cannot sway it.

    The outputs, weighed by fixed random weights, are moved along a fixed
    random direction by two relative steps: one below float32's resolution,
    one well above it. A float64 computation responds to both alike (the
    same slope); float32 parts do not see the small step at all."""
    floating = [i for i, a in enumerate(inputs.args)
                if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not floating:
        return FLOAT64
    reference = [t.detach().double() for t in tensors_of(output) if t.is_floating_point()]
    generator = torch.Generator(device="cpu").manual_seed(29)
    weights = [torch.randn(t.shape, dtype=torch.float64, generator=generator).to(t.device)
               for t in reference]
    directions = {i: torch.randn(inputs.args[i].shape, dtype=torch.float64,
                                 generator=generator).to(inputs.args[i].device)
                  for i in floating}

    def slope(step: float) -> float | None:
        moved = inputs
        for i, direction in directions.items():
            value = inputs.args[i].detach()
            moved = moved.with_arg(i, value + step * value.abs().clamp(min=1e-3) * direction)
        try:
            outputs = [t.double() for t in _floating_outputs(target, fresh(moved.args))]
        except Exception:
            return None
        if [o.shape for o in outputs] != [r.shape for r in reference]:
            return None
        return sum(float(((o - r) * w).sum()) for o, r, w in
                   zip(outputs, reference, weights, strict=True)) / step

    fine, coarse = slope(2.0 ** -34), slope(2.0 ** -16)
    if fine is None or coarse is None:
        return FLOAT64
    scale = max(abs(coarse), 1e-6 * sum(float((r * w).abs().sum())
                                        for r, w in zip(reference, weights, strict=True)))
    if abs(fine - coarse) <= 1e-2 * scale:
        return FLOAT64
    return float32(torch.float64, "computes in float32 on float64 inputs, wholly or in part")


def reference_of(cls: type) -> Callable[..., Any] | None:
    """A declared reference implementation: a `reference` staticmethod, or
    `@example_inputs(..., reference=fn)`."""
    from . import REFERENCE_ATTRIBUTE

    declared_reference = getattr(cls, REFERENCE_ATTRIBUTE, None)
    if callable(declared_reference):
        return declared_reference
    candidate = getattr(cls, "reference", None)
    return candidate if callable(candidate) else None


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------
def run_all(target: Target, calls: Iterable[dict[str, Any]] = ()) -> Inputs | None:
    """Every check; returns the inputs used (None: the code failed first)."""
    try:
        inputs = choose_inputs(target, calls)
        inputs = settle_precision(target, inputs)
    except CodeError as exc:
        target.report("AGD003", where=exc.where, detail=exc.detail)
        return None
    if target.precision.name in HALF.values():
        check_against_reference(target, inputs)
        return inputs
    check_inputs(target, inputs)
    if inputs.source == "synthesized":
        for index in inputs.flags[:MAX_FLAG_PASSES]:
            value = inputs.args[index]
            if not isinstance(value, bool):
                continue
            flipped = inputs.with_arg(index, not value)
            if _forward_error(target, flipped) is not None:
                continue
            target.note = f"with `{inputs.name(index)}={not value}`"
            try:
                check_inputs(target, flipped)
            except NotChecked:
                pass
            finally:
                target.note = ""
    return inputs


def check_inputs(target: Target, inputs: Inputs) -> None:
    """Every check on one set of inputs."""
    inputs = freeze_none_gradients(target, inputs)
    if not differentiable_positions(inputs.args):
        raise NotChecked("no floating-point tensor input whose gradient backward computes")
    check_input_mutation(target, inputs)
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
            check_noncontiguous_grad_output(target, inputs)
        check_optional_none(target, inputs)
    if target.has_jvp:
        check_forward_ad(target, inputs)
    if target.has_vmap:
        check_vmap(target, inputs)


def freeze_none_gradients(target: Target, inputs: Inputs) -> Inputs:
    """Inputs backward returns None for on purpose (loss targets, cos/sin
    tables) stop requiring grad, as torch's own tests leave them, so that the
    others are still checked; AGD015 when the outputs depend on them."""
    try:
        outputs, positions, grads = _unit_backward(target, fresh(inputs.args))
    except Exception:
        return inputs  # check_forward_backward reports it
    none = [index for index, grad in zip(positions, grads, strict=True) if grad is None]
    if not none:
        return inputs
    frozen = inputs
    for index in none:
        tensor = inputs.args[index]
        frozen = frozen.with_arg(index, tensor.detach().requires_grad_(False))
    losses = bool(outputs) and all(o.numel() == 1 for o in outputs)
    for index in none:
        if inputs.args[index].is_floating_point() and \
                _meant_to_be_trained(inputs, index, positions, losses):
            _check_dependence(target, frozen, index)
    return frozen


def _meant_to_be_trained(inputs: Inputs, index: int, positions: list[int],
                         losses: bool) -> bool:
    """Whether a None gradient for this input can be a mistake. A recorded
    call says so (the project passed it requiring grad); otherwise loss
    targets, labels, masks and cos/sin tables are None by design, as are the
    later inputs of a Function whose outputs are scalar losses."""
    if inputs.source == RECORDED:
        return True
    role = tensor_role(inputs.name(index))
    if role in ("target", "labels", "mask", "table", "index"):
        return False
    return not (losses and role == "main" and index != positions[0])


def _check_dependence(target: Target, inputs: Inputs, index: int) -> None:
    """AGD015: do the outputs move when this input moves?"""
    args = list(fresh(inputs.args, requires=set()))
    base = args[index]
    generator = torch.Generator(device="cpu").manual_seed(23)
    direction = torch.randn(base.shape, dtype=torch.float64, generator=generator).to(
        base.device, base.dtype)
    step = target.precision.eps * 10
    try:
        args[index] = base + step * direction
        up = _floating_outputs(target, args)
        args[index] = base - step * direction
        down = _floating_outputs(target, args)
    except Exception:
        return
    sensitivity = max(((u.double() - d.double()).abs().max().item() / (2 * step)
                       for u, d in zip(up, down, strict=False)
                       if u.shape == d.shape and u.numel()),
                      default=0.0)
    if not sensitivity < 1e12:
        return  # the perturbation overflowed (an exponential of a log-gate): no measure
    if sensitivity > 100 * target.precision.atol:
        target.report("AGD015", index=index, name=inputs.name(index),
                      detail=f"finite differences move them by {sensitivity:.3g} per unit")


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


def check_forward_backward(target: Target, inputs: Inputs) -> bool:
    """AGD003/004 (raised, wrong shapes), AGD005 (gradient changed), AGD006 (ctx
    attributes), AGD007 (saved tensors changed). True when backward works."""
    args = fresh(inputs.args)
    try:
        output = target.apply(*args)
    except Exception as exc:
        target.report("AGD003", where="forward", detail=first_line(exc))
        return False
    outputs = differentiable_outputs(output)
    node = outputs[0].grad_fn if outputs else None
    if node is not None:
        _check_ctx_attributes(target, node)
    saved = _saved_tensors(node)
    versions = [t._version for t in saved]
    snapshots = [t.detach().clone() for t in saved]
    generator = torch.Generator(device="cpu").manual_seed(7)
    grads = [torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device)
             for t in outputs]
    copies = [g.clone() for g in grads]
    wanted = [args[i] for i in differentiable_positions(args)]
    try:
        results = torch.autograd.grad(outputs, wanted, grads, allow_unused=True,
                                      retain_graph=True)
    except Exception as exc:
        _report_backward_error(target, inputs, exc)
        return False
    for index, (grad, copy) in enumerate(zip(grads, copies, strict=True)):
        if not torch.equal(grad, copy):
            change = (grad - copy).abs().max().item()
            target.report("AGD005", index=index, error=f"{change:.3g}")
    for index, (tensor, version, snapshot) in enumerate(zip(saved, versions, snapshots,
                                                            strict=True)):
        if tensor._version != version:
            target.report("AGD007", index=index,
                          how=f"its version went from {version} to {tensor._version}")
        elif not torch.equal(tensor.detach(), snapshot):
            change = (tensor.detach().double() - snapshot.double()).abs().max().item()
            target.report("AGD007", index=index,
                          how=f"its values changed by up to {change:.3g}, written behind "
                              "autograd's version counter (a kernel or `.data`)")
    _check_raw_gradients(target, inputs, args, node, grads, output)
    if any(f["code"] in ("AGD004", "AGD005", "AGD007", "AGD011") for f in target.findings):
        return False  # numerical checks would only echo this defect
    return all(r is None or bool(torch.isfinite(r).all()) for r in results)


def _saved_tensors(node: Any) -> list[torch.Tensor]:
    try:
        return [t for t in node.saved_tensors if isinstance(t, torch.Tensor)] if node else []
    except Exception:
        return []


def _check_ctx_attributes(target: Target, node: Any) -> None:
    attributes = getattr(node, "__dict__", {})
    for attr, value in attributes.items():
        what = _tensor_description(value)
        if what is not None:
            target.report("AGD006", attr=attr, what=what)


def _tensor_description(value: Any) -> str | None:
    """What a ctx attribute holds, when it holds floating-point tensors (the
    ones autograd tracks; integer indices and boolean masks carry no graph)."""
    if _floating(value):
        return f"a tensor of shape {list(value.shape)}"
    if isinstance(value, (list, tuple, set)):
        if any(_floating(v) for v in value):
            return f"a {type(value).__name__} of tensors"
    elif isinstance(value, dict):
        if any(_floating(v) for v in value.values()):
            return "a dict of tensors"
    return None


def _floating(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def _report_backward_error(target: Target, inputs: Inputs, exc: Exception) -> None:
    message = first_line(exc)
    if not inputs.trusted and _raised_in_user_code(exc):
        # With guessed inputs, only autograd's own verdict on what backward
        # returned is trusted; an error inside backward may be about the guess.
        where = _user_frame(exc)
        raise NotChecked(f"backward raised {message}{where} with {inputs.describe()}; "
                         "record the project's own calls (`pytest --autograd-record`) or "
                         "declare inputs (`@example_inputs(...)`) to check it")
    if _SHAPE_ERROR in message:
        # "... at index 0 - got [3] but expected shape compatible with [3, 4]"
        tail = message.split(_SHAPE_ERROR, 1)[1]
        index_text = tail.strip().split(" ", 1)[0]
        index = int(index_text) if index_text.isdigit() else 0
        got = tail.split("got", 1)[1].split("but", 1)[0].strip() if "got" in tail else "?"
        expected = tail.split("compatible with", 1)[1].strip() if "compatible with" in tail \
            else "?"
        target.report("AGD004", index=index, name=inputs.name(index),
                      got=f"shape {got}", expected=f"shape {expected}")
        return
    target.report("AGD003", where="backward", detail=message)


def _user_frames(exc: BaseException) -> list[Any]:
    """The traceback's frames outside autograd's machinery and this package."""
    import os

    ours = (os.path.join(os.path.dirname(torch.__file__), "autograd") + os.sep,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
    frames = []
    frame = exc.__traceback__
    while frame is not None:
        filename = os.path.abspath(frame.tb_frame.f_code.co_filename)
        if not filename.startswith(ours) and not filename.startswith("<"):
            frames.append(frame)
        frame = frame.tb_next
    return frames


def _raised_in_user_code(exc: BaseException) -> bool:
    """Whether the traceback reaches code outside autograd's machinery and this
    package (backward's own body, wherever it lives: torch's own Functions too),
    rather than ending in autograd's checks of what backward returned."""
    return bool(_user_frames(exc))


def _user_frame(exc: BaseException) -> str:
    import os

    frames = _user_frames(exc)
    if not frames:
        return ""
    last = frames[-1]
    code = last.tb_frame.f_code
    return f" in {code.co_name} ({os.path.basename(code.co_filename)}:{last.tb_lineno})"


def _check_raw_gradients(target: Target, inputs: Inputs, args: tuple[Any, ...], node: Any,
                         grads: list[torch.Tensor], output: Any) -> None:
    """AGD004 for what the engine silently converts: dtype and device. backward
    is called directly (as the engine does) to see what it returns."""
    if node is None or not hasattr(node, "_forward_cls"):
        return
    all_outputs = output if isinstance(output, (tuple, list)) else (output,)
    diff = iter(grads)
    incoming = []
    for item in all_outputs:
        if isinstance(item, torch.Tensor) and item.requires_grad and \
                (item.is_floating_point() or item.is_complex()):
            incoming.append(next(diff, None))
        elif isinstance(item, torch.Tensor):
            incoming.append(torch.zeros_like(item))
        else:
            incoming.append(None)
    try:
        raw = node._forward_cls.backward(node, *[g.clone() if g is not None else g
                                               for g in incoming])
    except Exception:
        return  # the engine path worked; a direct call differs in details
    returned = raw if isinstance(raw, tuple) else (raw,)
    for index, (arg, grad) in enumerate(zip(args, returned, strict=False)):
        if not (isinstance(arg, torch.Tensor) and arg.requires_grad and
                isinstance(grad, torch.Tensor)):
            continue
        if grad.dtype != arg.dtype:
            if grad.dtype == torch.float32 and arg.dtype == torch.float64 and \
                    inputs.native_dtype(index) != torch.float64:
                continue  # float64 is our choice, not its callers': they pass float32 or less
            target.report("AGD004", index=index, name=inputs.name(index),
                          got=f"dtype {grad.dtype}", expected=f"dtype {arg.dtype}")
        elif grad.device != arg.device:
            target.report("AGD004", index=index, name=inputs.name(index),
                          got=f"device {grad.device}", expected=f"device {arg.device}")


def _gradcheck(target: Target, args: tuple[Any, ...], **options: Any) -> None:
    precision = target.precision
    settings = {"eps": precision.eps, "atol": precision.atol, "rtol": precision.rtol,
                "nondet_tol": precision.nondet_tol, "raise_exception": True,
                "check_undefined_grad": False, "check_batched_grad": False,
                "fast_mode": target.fast}
    settings.update(options)
    with _fast_failures(target):
        torch.autograd.gradcheck(target.tensor_outputs, args, **settings)


@contextmanager
def _fast_failures(target: Target) -> Iterator[None]:
    """In fast mode, a mismatch makes torch rerun the slow mode only to word
    its error (minutes for an interpreted kernel); `_worst_error` says where
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


def _worst_error(target: Target, inputs: Inputs) -> str:
    """Which input's Jacobian is furthest from finite differences, and by how much."""
    if target.fast:
        return _worst_projected_error(target, inputs)
    args = fresh(inputs.args)
    eps = target.precision.eps
    worst: tuple[float, int] | None = None
    for index in differentiable_positions(args):
        x = args[index]
        if x.numel() > 64 or x.is_complex():
            continue

        def of_input(value: torch.Tensor, index: int = index) -> torch.Tensor:
            call = list(fresh(args, requires=set()))
            call[index] = value
            outs = differentiable_outputs(target.apply(*call)) or tensors_of(
                target.apply(*call))
            return torch.cat([o.reshape(-1).double() for o in outs])

        try:
            analytical = torch.autograd.functional.jacobian(of_input, x.detach().clone())
            numerical = torch.zeros_like(analytical)
            flat = x.detach().clone().reshape(-1)
            with torch.no_grad():
                for k in range(flat.numel()):
                    up, down = flat.clone(), flat.clone()
                    up[k] += eps
                    down[k] -= eps
                    column = (of_input(up.reshape(x.shape)) - of_input(down.reshape(x.shape)))
                    numerical.reshape(column.numel(), -1)[:, k] = column / (2 * eps)
            error = (analytical - numerical).abs().max().item()
        except Exception:
            continue
        if worst is None or error > worst[0]:
            worst = (error, index)
    return _worst_message(inputs, worst, "max abs error")


def _worst_projected_error(target: Target, inputs: Inputs) -> str:
    """`_worst_error` for a slow forward: per input, the derivative along one
    random direction, from backward and from finite differences."""
    args = fresh(inputs.args)
    eps = target.precision.eps
    generator = torch.Generator(device="cpu").manual_seed(31)
    try:
        outputs = differentiable_outputs(target.apply(*args))
        weights = [torch.randn(o.shape, dtype=torch.float64, generator=generator).to(
            o.device, o.dtype) for o in outputs]
        positions = differentiable_positions(args)
        grads = torch.autograd.grad(outputs, [args[i] for i in positions], weights,
                                    allow_unused=True)
    except Exception:
        return ""
    worst: tuple[float, int] | None = None
    for index, grad in zip(positions, grads, strict=True):
        x = args[index]
        if x.is_complex():
            continue
        direction = torch.randn(x.shape, dtype=torch.float64, generator=generator).to(
            x.device, x.dtype)
        analytical = float((grad * direction).sum()) if grad is not None else 0.0
        call = list(fresh(args, requires=set()))
        try:
            call[index] = x.detach() + eps * direction
            up = _floating_outputs(target, call)
            call[index] = x.detach() - eps * direction
            down = _floating_outputs(target, call)
        except Exception:
            continue
        numerical = sum(float(((u - d) * w).sum()) for u, d, w in
                        zip(up, down, weights, strict=False)) / (2 * eps)
        error = abs(analytical - numerical)
        if worst is None or error > worst[0]:
            worst = (error, index)
    return _worst_message(inputs, worst, "the derivative along a random direction is off by")


def _worst_message(inputs: Inputs, worst: tuple[float, int] | None, what: str) -> str:
    if worst is None:
        return ""
    error, index = worst
    return f"worst is input {index} (`{inputs.name(index)}`), {what} {error:.3g}"


def _gradcheck_failure(target: Target, inputs: Inputs, exc: BaseException, code: str,
                       **fields: Any) -> None:
    """Report a failed gradcheck-style check under the rule its cause
    belongs to: a mismatch is the check's own rule; an error raised by
    backward is AGD003 (AGD004 for a bad shape); a backward that gives
    different results for the same call changed its saved tensors (AGD007)
    or is not deterministic."""
    message = first_line(exc)
    if isinstance(exc, GradcheckError):
        if "not reentrant" in str(exc):
            if not inputs.trusted:
                raise NotChecked("backward is not reentrant with synthesized inputs (two "
                                 "identical calls differ: memory a kernel leaves unwritten "
                                 "for a guessed shape?); record the project's own calls to "
                                 "check it") from None
            detail = "backward is not reentrant: two calls with the same inputs give " \
                     "different values (it changes what it saved, or is nondeterministic)"
            target.report(code, detail=detail, **fields)
            return
        detail = (_worst_error(target, inputs) if code == "AGD001" else "") or message
        target.report(code, detail=f"{detail} ({inputs.describe()})", **fields)
        return
    if _SHAPE_ERROR in message:
        _report_backward_error(target, inputs, exc)  # type: ignore[arg-type]
        return
    if "NoneType" in message:
        # backward worked when every incoming gradient was defined; gradcheck
        # leaves those of the outputs it is not differentiating undefined.
        target.report("AGD010", detail=message)
        return
    target.report("AGD003", where="backward", detail=message)


def deliberate_gradient(target: Target, inputs: Inputs) -> str | None:
    """"identity" when forward returns its differentiable inputs unchanged
    (gradient reversal, scaling, clipping, injection), "piecewise-constant"
    when most elements of its floating-point outputs do not move under a
    small change of those inputs (rounding, signs, thresholds, quantization:
    straight-through estimators), else None."""
    positions = differentiable_positions(inputs.args)
    try:
        with torch.no_grad():
            args = fresh(inputs.args)
            outputs = _floating_outputs(target, args)
            if not outputs or not positions:
                return None
            sources = [args[i] for i in positions]
            if all(any(o.shape == s.shape and torch.equal(o, s) for s in sources)
                   for o in outputs):
                return "identity"
            nudged = list(args)
            for i in positions:
                tensor = args[i]
                nudged[i] = tensor + _NUDGE * tensor.abs().clamp(min=1.0) * \
                    torch.rand_like(tensor)
            moved = _floating_outputs(target, tuple(nudged))
    except Exception:
        return None  # the other checks say what fails
    if len(moved) != len(outputs) or any(a.shape != b.shape for a, b in zip(outputs, moved,
                                                                          strict=True)):
        return None
    total = sum(o.numel() for o in outputs)
    changed = sum(int((a != b).sum()) for a, b in zip(outputs, moved, strict=True))
    return "piecewise-constant" if total and changed < total / 2 else None


# A relative change that moves every element of a smooth function's output,
# even one computed in half precision, while most elements of a staircase
# (rounding to steps of 1/256 or coarser) stay on their step.
_NUDGE = 1e-3


def check_gradcheck(target: Target, inputs: Inputs) -> bool:
    """AGD001."""
    try:
        _gradcheck(target, fresh(inputs.args))
    except Exception as exc:
        _gradcheck_failure(target, inputs, exc, "AGD001")
        return False
    return True


def check_gradgradcheck(target: Target, inputs: Inputs) -> None:
    """AGD002."""
    precision = target.precision
    try:
        with _fast_failures(target):
            torch.autograd.gradgradcheck(target.tensor_outputs, fresh(inputs.args),
                                         eps=precision.eps, atol=precision.atol,
                                         rtol=precision.rtol, nondet_tol=precision.nondet_tol,
                                         check_undefined_grad=False, check_batched_grad=False,
                                         fast_mode=target.fast)
    except Exception as exc:
        if isinstance(exc, GradcheckError):
            target.report("AGD002", detail=first_line(exc))
        else:
            target.report("AGD002", detail=f"double backward raises {first_line(exc)}")


def check_undefined_grad(target: Target, inputs: Inputs) -> None:
    """AGD010."""
    try:
        _gradcheck(target, fresh(inputs.args), check_undefined_grad=True)
    except Exception as exc:
        target.report("AGD010", detail=first_line(exc))


def check_forward_ad(target: Target, inputs: Inputs) -> None:
    """AGD008."""
    if not uses_setup_context(target.cls):
        return  # forward AD needs setup_context; AGF/torch report the style
    try:
        _gradcheck(target, fresh(inputs.args), check_forward_ad=True, check_backward_ad=False)
    except Exception as exc:
        target.report("AGD008", detail=first_line(exc))


def check_partial_requires_grad(target: Target, inputs: Inputs) -> None:
    """AGD013: one differentiable input at a time."""
    positions = differentiable_positions(inputs.args)
    if len(positions) < 2:
        return
    for index in positions:
        try:
            _gradcheck(target, fresh(inputs.args, requires={index}))
        except GradcheckError:
            target.report("AGD013", index=index, name=inputs.name(index),
                          detail="gradcheck disagrees")
            return
        except Exception as exc:
            target.report("AGD013", index=index, name=inputs.name(index),
                          detail=f"backward raises {first_line(exc)}")
            return


def check_optional_none(target: Target, inputs: Inputs) -> None:
    """AGD012: inputs that default to None, left as None."""
    if not inputs.none_defaults:
        return
    args = list(fresh(inputs.args))
    for index in inputs.none_defaults:
        args[index] = None
    names = ", ".join(f"`{inputs.name(i)}`" for i in inputs.none_defaults)
    try:
        output = target.apply(*args)
    except Exception as exc:
        target.report("AGD012", names=names, where="forward", detail=first_line(exc))
        return
    outputs = differentiable_outputs(output)
    wanted = [args[i] for i in differentiable_positions(tuple(args))]
    if not outputs or not wanted:
        return
    try:
        torch.autograd.grad(outputs, wanted, [torch.ones_like(o) for o in outputs],
                            allow_unused=True)
    except Exception as exc:
        target.report("AGD012", names=names, where="backward", detail=first_line(exc))


def check_noncontiguous_grad_output(target: Target, inputs: Inputs) -> None:
    """AGD014: the same gradient values in a strided or expanded layout."""

    def gradients(make: Callable[[torch.Tensor], torch.Tensor]) -> list[torch.Tensor | None]:
        args = fresh(inputs.args)
        outputs = differentiable_outputs(target.apply(*args))
        generator = torch.Generator(device="cpu").manual_seed(11)
        grads = [make(torch.randn(o.shape, dtype=o.dtype, generator=generator).to(o.device))
                 for o in outputs]
        wanted = [args[i] for i in differentiable_positions(args)]
        return list(torch.autograd.grad(outputs, wanted, grads, allow_unused=True))

    layouts = {
        "non-contiguous (transposed or strided)": _strided,
        "expanded (stride 0)": lambda g: g.reshape(-1)[:1].reshape([1] * g.dim()).expand(
            g.shape) if g.dim() else g,
    }
    try:
        reference_expanded = gradients(lambda g: (g.reshape(-1)[:1].reshape([1] * g.dim())
                                                  .expand(g.shape).contiguous()
                                                  if g.dim() else g))
        reference = gradients(lambda g: g)
    except Exception:
        return
    rtol = target.precision.close_rtol
    for layout, make in layouts.items():
        expected = reference_expanded if layout.startswith("expanded") else reference
        try:
            got = gradients(make)
        except Exception as exc:
            target.report("AGD014", detail=f"raises {first_line(exc)}", layout=layout)
            return
        for a, b in zip(expected, got, strict=True):
            if (a is None) != (b is None) or (a is not None and b is not None and
                                              not torch.allclose(a, b, rtol=rtol,
                                                                 atol=rtol * 1e-2)):
                target.report("AGD014", detail="returns different gradients", layout=layout)
                return


def _strided(g: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous tensor: column-major for matrices
    (what a transposed matmul hands back), every other element for vectors."""
    if g.dim() == 0:
        return g
    if g.dim() >= 2 and g.shape[-1] > 1 and g.shape[-2] > 1:
        return g.transpose(-1, -2).contiguous().transpose(-1, -2)
    wide = torch.zeros(*g.shape[:-1], g.shape[-1] * 2, dtype=g.dtype, device=g.device)
    wide[..., ::2] = g
    return wide[..., ::2]


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


# ---------------------------------------------------------------------------
# Half precision: against a declared reference
# ---------------------------------------------------------------------------
def check_against_reference(target: Target, inputs: Inputs) -> None:
    """AGD001 for a Function that only computes in bfloat16/float16: its
    outputs and gradients against a reference implementation in float64."""
    reference = reference_of(target.cls)
    precision = target.precision
    if reference is None:
        raise NotChecked(f"it computes only in {precision.name} ({precision.note}), where "
                         "finite differences say nothing; declare a reference "
                         "implementation (a `reference` staticmethod taking forward's inputs, "
                         "or `@example_inputs(..., reference=fn)`) to check it against")
    low = fresh(inputs.args)
    wide = fresh(inputs.with_dtype(torch.float64).args)
    try:
        got = differentiable_outputs(target.apply(*low))
    except Exception as exc:
        target.report("AGD003", where="forward", detail=first_line(exc))
        return
    try:
        expected = [t for t in tensors_of(reference(*wide)) if t.is_floating_point()]
    except Exception as exc:
        raise NotChecked(f"the reference implementation raised {first_line(exc)}") from None
    tolerance = 3e-2 if precision.name == "bfloat16" else 5e-3
    if len(got) != len(expected):
        raise NotChecked("the reference returns a different number of tensors than forward")
    generator = torch.Generator(device="cpu").manual_seed(13)
    grads = [torch.randn(t.shape, dtype=torch.float64, generator=generator).to(t.device)
             for t in expected]
    for index, (a, b) in enumerate(zip(got, expected, strict=True)):
        if a.shape != b.shape or not _near(a.double(), b, tolerance):
            target.report("AGD001", detail=f"output {index} differs from the reference by "
                          f"{_gap(a.double(), b)} ({inputs.describe()})",
                          precision=f"{precision.name}, against the declared reference")
            return
    try:
        low_grads = torch.autograd.grad(got, [low[i] for i in differentiable_positions(low)],
                                        [g.to(o.dtype) for g, o in zip(grads, got, strict=True)],
                                        allow_unused=True)
        wide_grads = torch.autograd.grad(expected,
                                         [wide[i] for i in differentiable_positions(wide)],
                                         grads, allow_unused=True)
    except Exception as exc:
        _report_backward_error(target, inputs, exc)  # type: ignore[arg-type]
        return
    for position, a, b in zip(differentiable_positions(low), low_grads, wide_grads,
                              strict=True):
        if a is None or b is None:
            continue
        if not _near(a.double(), b, tolerance):
            target.report("AGD001", detail=f"the gradient of input {position} "
                          f"(`{inputs.name(position)}`) differs from the reference's by "
                          f"{_gap(a.double(), b)} ({inputs.describe()})",
                          precision=f"{precision.name}, against the declared reference")
            return


def _near(a: torch.Tensor, b: torch.Tensor, tolerance: float) -> bool:
    scale = max(float(b.abs().max()) if b.numel() else 0.0, 1.0)
    return bool((a - b).abs().max() <= tolerance * scale) if a.numel() else True


def _gap(a: torch.Tensor, b: torch.Tensor) -> str:
    return f"{(a - b).abs().max().item():.3g}" if a.shape == b.shape else \
        f"shape {list(a.shape)} against {list(b.shape)}"


__all__ = ["NotChecked", "Target", "first_line", "run_all", "short"]
