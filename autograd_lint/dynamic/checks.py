"""The dynamic checks of one Function (AGD001-AGD014). Runs in the worker.

Each check returns findings as plain dicts (`code` plus the message fields of
the rule); a check whose own machinery fails reports nothing (precision
first), and a check that needs a working backward runs only when the basic
gradcheck passed, so one bug is reported once, by the most specific rule.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from .inputs import (
    Inputs,
    Unsynthesizable,
    declared,
    differentiable_positions,
    synthesized,
    uses_setup_context,
)

Finding = dict[str, Any]


class NotChecked(Exception):
    """The Function could not be checked (AGD900); the message says why."""


@dataclass
class Target:
    cls: type
    once_differentiable: bool
    has_jvp: bool
    has_vmap: bool
    device: torch.device
    findings: list[Finding] = field(default_factory=list)
    # An in-place Function (mark_dirty) cannot take a leaf that requires grad:
    # it gets a differentiable copy of each input, as a caller would pass.
    copy_leaves: bool = False

    def report(self, code: str, **fields: Any) -> None:
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
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


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


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------
def choose_inputs(target: Target) -> Inputs:
    """The first declared example, or the first synthesized one forward accepts."""
    examples = declared(target.cls, target.device)
    if examples is not None:
        if not examples:
            raise NotChecked("gradcheck_inputs returned no examples")
        try:
            _first_forward(target, examples[0].args)
        except Exception:
            pass  # reported by the forward check
        return examples[0]
    errors: list[str] = []
    try:
        for candidate in synthesized(target.cls, target.device):
            try:
                output = _first_forward(target, candidate.args)
            except Exception as exc:  # the usual way a guess fails
                errors.append(first_line(exc))
                continue
            if not differentiable_outputs(output):
                errors.append("no output requires grad")
                continue
            if not all(bool(torch.isfinite(t).all()) for t in tensors_of(output)
                       if t.is_floating_point()):
                errors.append("non-finite outputs")
                continue
            return candidate
    except Unsynthesizable as exc:
        raise NotChecked(f"cannot synthesize inputs: {exc}; declare them with "
                         "`@example_inputs(...)` or a `gradcheck_inputs` staticmethod") from None
    last = errors[-1] if errors else "forward takes no inputs that can be synthesized"
    raise NotChecked(f"could not build inputs forward accepts (last try: {last}); declare "
                     "them with `@example_inputs(...)` or a `gradcheck_inputs` staticmethod")


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
# The checks
# ---------------------------------------------------------------------------
def run_all(target: Target) -> Inputs:
    inputs = choose_inputs(target)
    positions = differentiable_positions(inputs.args)
    if not positions:
        raise NotChecked("no floating-point tensor input to differentiate")
    check_input_mutation(target, inputs)
    backward_ok = check_forward_backward(target, inputs)
    if backward_ok:
        gradcheck_ok = check_gradcheck(target, inputs)
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
    return inputs


def _name(inputs: Inputs, index: int) -> str:
    return inputs.names[index] if index < len(inputs.names) else f"arg{index}"


def check_input_mutation(target: Target, inputs: Inputs) -> None:
    """AGD011: forward changed a tensor input it did not mark dirty."""
    args = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in inputs.args)
    before = [a.clone() if isinstance(a, torch.Tensor) else None for a in args]
    try:
        with torch.no_grad():
            output = target.apply(*args)
    except Exception:
        return  # check_forward_backward reports it
    returned = {id(t) for t in tensors_of(output)}
    for index, (arg, old) in enumerate(zip(args, before, strict=True)):
        if old is None or id(arg) in returned:  # returned input: mark_dirty's contract
            continue
        if arg.shape != old.shape or not torch.equal(arg, old):
            change = (arg.double() - old.double()).abs().max().item() \
                if arg.shape == old.shape else float("nan")
            target.report("AGD011", index=index, name=_name(inputs, index),
                          error=f"{change:.3g}")


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
    for index, (tensor, version) in enumerate(zip(saved, versions, strict=True)):
        if tensor._version != version:
            target.report("AGD007", index=index, before=version, after=tensor._version)
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


_SHAPE_ERROR = "returned an invalid gradient at index"


def _report_backward_error(target: Target, inputs: Inputs, exc: Exception) -> None:
    message = first_line(exc)
    if not inputs.declared and _raised_in_user_code(exc):
        # With guessed inputs, only autograd's own verdict on what backward
        # returned is trusted; an error inside backward may be about the guess.
        raise NotChecked(f"backward raised {message} with synthesized inputs; declare "
                         "inputs with `@example_inputs(...)` or a `gradcheck_inputs` "
                         "staticmethod to check it")
    if _SHAPE_ERROR in message:
        # "... at index 0 - got [3] but expected shape compatible with [3, 4]"
        tail = message.split(_SHAPE_ERROR, 1)[1]
        index_text = tail.strip().split(" ", 1)[0]
        index = int(index_text) if index_text.isdigit() else 0
        got = tail.split("got", 1)[1].split("but", 1)[0].strip() if "got" in tail else "?"
        expected = tail.split("compatible with", 1)[1].strip() if "compatible with" in tail \
            else "?"
        target.report("AGD004", index=index, name=_name(inputs, index),
                      got=f"shape {got}", expected=f"shape {expected}")
        return
    target.report("AGD003", where="backward", detail=message)


def _raised_in_user_code(exc: BaseException) -> bool:
    """Whether the traceback reaches code outside autograd's machinery and this
    package (backward's own body, wherever it lives: torch's own Functions too),
    rather than ending in autograd's checks of what backward returned."""
    import os

    ours = (os.path.join(os.path.dirname(torch.__file__), "autograd") + os.sep,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
    frame = exc.__traceback__
    while frame is not None:
        filename = os.path.abspath(frame.tb_frame.f_code.co_filename)
        if not filename.startswith(ours) and not filename.startswith("<"):
            return True
        frame = frame.tb_next
    return False


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
            target.report("AGD004", index=index, name=_name(inputs, index),
                          got=f"dtype {grad.dtype}", expected=f"dtype {arg.dtype}")
        elif grad.device != arg.device:
            target.report("AGD004", index=index, name=_name(inputs, index),
                          got=f"device {grad.device}", expected=f"device {arg.device}")


def _gradcheck(function: Callable[..., Any], args: tuple[Any, ...], **options: Any) -> None:
    settings = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, "raise_exception": True,
                "check_undefined_grad": False, "check_batched_grad": False}
    settings.update(options)
    torch.autograd.gradcheck(function, args, **settings)


def _worst_error(target: Target, inputs: Inputs) -> str:
    """Which input's Jacobian is furthest from finite differences, and by how much."""
    args = fresh(inputs.args)
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
            eps = 1e-6
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
    if worst is None:
        return ""
    return f"worst is input {worst[1]} (`{_name(inputs, worst[1])}`), max abs error " \
           f"{worst[0]:.3g}"


def check_gradcheck(target: Target, inputs: Inputs) -> bool:
    """AGD001."""
    try:
        _gradcheck(target.tensor_outputs, fresh(inputs.args))
    except GradcheckError as exc:
        detail = _worst_error(target, inputs) or first_line(exc)
        target.report("AGD001", detail=f"{detail} ({inputs.describe()})")
        return False
    except Exception as exc:
        # backward worked when every incoming gradient was defined; gradcheck
        # leaves the gradients of the outputs it is not differentiating undefined.
        target.report("AGD010", detail=first_line(exc))
        return False
    return True


def check_gradgradcheck(target: Target, inputs: Inputs) -> None:
    """AGD002."""
    try:
        torch.autograd.gradgradcheck(target.tensor_outputs, fresh(inputs.args), eps=1e-6,
                                     atol=1e-5,
                                     rtol=1e-3, check_undefined_grad=False,
                                     check_batched_grad=False)
    except Exception as exc:
        target.report("AGD002", detail=first_line(exc))


def check_undefined_grad(target: Target, inputs: Inputs) -> None:
    """AGD010."""
    try:
        _gradcheck(target.tensor_outputs, fresh(inputs.args), check_undefined_grad=True)
    except Exception as exc:
        target.report("AGD010", detail=first_line(exc))


def check_forward_ad(target: Target, inputs: Inputs) -> None:
    """AGD008."""
    if not uses_setup_context(target.cls):
        return  # forward AD needs setup_context; AGF/torch report the style
    try:
        _gradcheck(target.tensor_outputs, fresh(inputs.args), check_forward_ad=True,
                   check_backward_ad=False)
    except Exception as exc:
        target.report("AGD008", detail=first_line(exc))


def check_partial_requires_grad(target: Target, inputs: Inputs) -> None:
    """AGD013: one differentiable input at a time."""
    positions = differentiable_positions(inputs.args)
    if len(positions) < 2:
        return
    for index in positions:
        try:
            _gradcheck(target.tensor_outputs, fresh(inputs.args, requires={index}))
        except GradcheckError:
            target.report("AGD013", index=index, name=_name(inputs, index),
                          detail="gradcheck disagrees")
            return
        except Exception as exc:
            target.report("AGD013", index=index, name=_name(inputs, index),
                          detail=f"backward raises {first_line(exc)}")
            return


def check_optional_none(target: Target, inputs: Inputs) -> None:
    """AGD012: inputs that default to None, left as None."""
    if not inputs.none_defaults:
        return
    args = list(fresh(inputs.args))
    for index in inputs.none_defaults:
        args[index] = None
    names = ", ".join(f"`{_name(inputs, i)}`" for i in inputs.none_defaults)
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
    for layout, make in layouts.items():
        expected = reference_expanded if layout.startswith("expanded") else reference
        try:
            got = gradients(make)
        except Exception as exc:
            target.report("AGD014", detail=f"raises {first_line(exc)}", layout=layout)
            return
        for a, b in zip(expected, got, strict=True):
            if (a is None) != (b is None) or (a is not None and b is not None and
                                              not torch.allclose(a, b, rtol=1e-7, atol=1e-9)):
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
        noise = torch.rand((batch, *args[i].shape), dtype=args[i].dtype, generator=generator)
        batched[i] = (noise + 0.5).to(args[i].device)
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
    if len(got) != len(expected) or any(
            a.shape != b.shape or not torch.allclose(a.to(b.dtype), b, rtol=1e-6, atol=1e-8)
            for a, b in zip(got, expected, strict=False)):
        target.report("AGD009", detail="results differ from a Python loop over the batch")
