"""Which inputs a Function is checked with: recorded calls first, then
declared examples, then synthesis (`inputs.py` builds the candidates). A
candidate is kept when forward and backward both take it, moving down the
precision ladder while forward or backward complains about the dtype, and
correcting a guessed shape that backward's gradient says is too large."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import torch

from .errors import (
    CodeError,
    NotChecked,
    Raised,
    Unsynthesizable,
    environmental,
    first_line,
    installed_version,
    out_of_memory,
    raise_if_code_error,
    raised,
    removed_feature,
)
from .inputs import Inputs, Synthesis, argument_of_gradient, declared, float_tensor, recorded
from .precision import HALF, LADDER, dtype_of
from .probing import (
    differentiable_outputs,
    first_forward,
    fresh,
    identical,
    reads_past_inputs,
    repeatable,
    tensors_of,
    unit_backward,
)
from .target import Target

_DTYPE_WORDS = re.compile(r"bf16|bfloat16|fp16|float16|half|fp32|float32|\bfloat\b|Float\b|"
                          r"Double|float64|dtype|scalar type", re.I)


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
        errors = []
        for candidate in source:
            # float64 first (the finest check), then the dtypes the project
            # passes: a kernel may refuse float64, for a reason that reads
            # as the machine's (Triton's interpreter) or as no dtype at all.
            native = candidate.in_native_dtypes()
            for trial in [candidate] + ([native] if native is not None else []):
                error = forward_error(target, trial)
                if error is None:
                    return trial
            errors.append(error)
        if all(environmental(e) for e in errors):
            raise NotChecked(f"forward fails on the project's own inputs for a reason of this "
                             f"machine, not of the code: {errors[0]}")
        return source[0]  # forward fails with the project's own inputs: a finding
    return synthesize(target)


def _legacy(target: Target) -> None:
    """A legacy Function (forward an instance method) is called as legacy
    code calls it, `Fn(...)(x)`: PyTorch refuses that, which is the finding."""
    try:
        instance = target.cls.__new__(target.cls)
        instance()
    except Exception as exc:
        raise CodeError("forward", f"{first_line(exc)} (a legacy Function: forward is an "
                                   "instance method, configured in `__init__`)") from None


def forward_error(target: Target, candidate: Inputs) -> str | None:
    try:
        first_forward(target, candidate.args)
    except Exception as exc:
        return first_line(exc)
    return None


def synthesize(target: Target) -> Inputs:
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
    if fallback is not None and narrow is None and \
            any(e.startswith((UNWRITTEN, READS_PAST)) for e in errors):
        # Backward took another candidate (its results depend on memory):
        # the error of the one forward alone takes may be about its guess.
        fallback = None
    if narrow is not None or fallback is not None:
        return narrow or fallback  # type: ignore[return-value]
    last = errors[-1] if errors else "forward takes no inputs that can be synthesized"
    if errors and out_of_memory(last):  # the machine's limit: as a MemoryError is
        raise NotChecked(f"ran out of memory on every input tried (last try: {last})")
    lacking = next((e for e in errors if environmental(e, guessed=True)), None)
    if lacking is not None:  # a gap no guess gets past, however far the others got
        raise NotChecked(_lacking(lacking))
    unwritten = next((e for e in errors if e.startswith((UNWRITTEN, READS_PAST))), None)
    if unwritten is not None:
        raise NotChecked(f"{unwritten} on the inputs tried, so the checks cannot compare "
                         "what it computes; declare inputs it covers with "
                         "`@example_inputs(...)`")
    same = _same_everywhere(errors)
    tried = f"every try: {same}{same.where}" if same is not None else \
        f"furthest try: {_furthest(errors)}"
    raise NotChecked(f"could not build inputs forward accepts ({tried}); declare "
                     "them with `@example_inputs(...)`, a `gradcheck_inputs` staticmethod, or "
                     "record the project's own calls (`pytest --autograd-record`)")


def _furthest(errors: list[str]) -> str:
    """The error of the candidate that got furthest into forward (the last
    of those that got as far): "not enough values to unpack" from forward's
    first line says little once a later candidate got past it."""
    return max(reversed(errors), key=lambda error: getattr(error, "reach", (0, 0)))


def _lacking(error: str) -> str:
    """Why forward cannot run here, whatever the inputs: what this machine
    lacks (a GPU, an interpreter gap), or what the installed Triton dropped."""
    blocker = f"{error}{getattr(error, 'where', '')}"
    if removed_feature(error):
        installed = installed_version("triton")
        return (f"forward needs what the installed {installed} no longer "
                f"{'has' if installed != 'libraries' else 'have'}, whatever the inputs "
                f"({blocker}); run it with the versions it was written for")
    return (f"forward needs what this machine lacks, whatever the inputs ({blocker}); run "
            "it where it runs (`--device cuda`)")


# What a candidate whose two identical calls differ is refused with, and one
# whose results change with what lies next to its inputs in memory.
UNWRITTEN = "identical calls give different results"
READS_PAST = "forward or backward reads past the ends of its inputs"
# Candidates that fail the same way, at the same place, before a blocker is
# named as such (fewer: the guesses, not the code, may be what fails).
_SAME_MIN_TRIES = 4


def _same_everywhere(errors: list[str]) -> Raised | None:
    """The error every candidate failed with, raised at one place (a wrapper
    unpacking the wrong number of values, or a guess of a parameter repeated
    in every candidate), when enough candidates were tried; None otherwise."""
    if len(errors) < _SAME_MIN_TRIES or not all(isinstance(e, Raised) for e in errors):
        return None
    first = errors[0]
    if not isinstance(first, Raised) or not first.where or any(
            e != first or getattr(e, "where", "") != first.where for e in errors):
        return None
    return first


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
        for dtype in LADDER[LADDER.index(dtype_of(candidate)) + 1:]:
            narrower = candidate.with_dtype(dtype)
            if forward_error(target, narrower) is None and \
                    _backward_error(target, narrower) is None:
                candidate = narrower
                output = first_forward(target, candidate.args)
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
            refusal = _refusal(target, candidate, synthesis) if error is None else None
            return (None, refusal) if refusal is not None else (candidate, error)
        index, shape = fix
        index = argument_of_gradient(candidate.args, index)
        if not (0 <= index < len(candidate.args)) or \
                not _ignores_excess(target, candidate, index, shape):
            return candidate, error  # a wrong gradient shape is a finding (AGD004)
        fixed = candidate.with_arg(index, float_tensor(shape, index, target.device).to(
            candidate.args[index].dtype))
        if forward_error(target, fixed) is not None:
            return candidate, error
        candidate = fixed
    return candidate, None


def _half(inputs: Inputs) -> bool:
    return any(isinstance(a, torch.Tensor) and a.dtype in HALF for a in inputs.args)


def _refusal(target: Target, candidate: Inputs, synthesis: Synthesis | None) -> str | None:
    """Why a candidate forward and backward both take cannot be checked:
    they do not give the same results twice (a guessed shape a kernel does
    not fully cover leaves `torch.empty` memory in them), or a made-up
    shape has a kernel read past the ends of an input; None when neither."""
    try:
        results = repeatable(target, candidate.args)
        if results is None:
            if synthesis is not None:
                synthesis.learn_unwritten(candidate)
            return f"{UNWRITTEN} (memory a kernel leaves unwritten for this shape?)"
        if not candidate.trusted and reads_past_inputs(target, candidate.args, results):
            if synthesis is not None:
                synthesis.learn_reads_past()
            return f"{READS_PAST} (a kernel without a mask for this shape?)"
    except Exception:
        return None  # not these probes' to judge
    return None


def _ignores_excess(target: Target, candidate: Inputs, index: int,
                    shape: tuple[int, ...]) -> bool:
    """Whether forward reads only the part of a guessed input that backward's
    gradient covers: its leading block when the gradient has the input's rank
    (a kernel reading `b[:, :3]` of a `b[3, 4]` by its strides, its sizes
    taken from another input), else its first elements (`w[:4]` of a
    `w[3, 4]`). The input was then guessed too large; otherwise backward's
    shape is the defect, not the guess."""
    tensor = candidate.args[index]
    wanted = 1
    for n in shape:
        wanted *= n
    if not isinstance(tensor, torch.Tensor) or not 0 < wanted < tensor.numel():
        return False
    changed = tensor.detach().clone()
    if len(shape) == tensor.dim() and all(s <= n for s, n in zip(shape, tensor.shape, strict=True)):
        outside = torch.ones(tensor.shape, dtype=torch.bool, device=tensor.device)
        outside[tuple(slice(0, s) for s in shape)] = False
        changed[outside] += 1.0
    else:
        changed.reshape(-1)[wanted:] += 1.0
    try:
        with torch.no_grad():
            before = tensors_of(target.apply(*fresh(candidate.args)))
            after = tensors_of(target.apply(*fresh(candidate.with_arg(index, changed).args)))
    except Exception:
        return False
    return identical(before, after)


def _forward_on_ladder(target: Target, candidate: Inputs, synthesis: Synthesis | None = None
                       ) -> tuple[Any, Inputs, str | None]:
    """forward with the candidate, moving down the dtypes while forward's
    complaint is about the dtype."""
    error = None
    for dtype in LADDER:
        trial = candidate if dtype == torch.float64 else candidate.with_dtype(dtype)
        try:
            return first_forward(target, trial.args), trial, None
        except Exception as exc:
            raise_if_code_error(exc, "forward")
            error = raised(exc, within=synthesis.forward if synthesis is not None else None)
            if synthesis is not None and synthesis.learn_numbers(exc, trial):
                break
            # (the error's line too: a bare `assert x.dtype == torch.bfloat16`
            # says nothing, its source line does)
            if not _DTYPE_WORDS.search(f"{exc} {error}"):
                if synthesis is not None:
                    synthesis.learn_from(exc, trial)
                break
    return None, candidate, error


def _backward_error(target: Target, candidate: Inputs) -> str | None:
    try:
        unit_backward(target, fresh(candidate.args))
    except Exception as exc:
        return raised(exc)
    return None


_GOT_SHAPE = re.compile(r"invalid gradient at index (\d+) - got \[([\d, ]*)\] but expected shape")


def _shape_fix(error: str) -> tuple[int, tuple[int, ...]] | None:
    """From "... at index 1 - got [4] but expected shape compatible with [3, 4]":
    the Function's backward says input 1 is 4 long."""
    match = _GOT_SHAPE.search(error)
    if match is None:
        return None
    shape = tuple(int(n) for n in match.group(2).replace(" ", "").split(",") if n)
    return int(match.group(1)), shape
