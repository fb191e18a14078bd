"""One forward and backward with random incoming gradients: backward raises
or returns gradients of the wrong shape, dtype or device (AGD003/AGD004),
changes its incoming gradients (AGD005), keeps tensors as ctx attributes
(AGD006), or its saved tensors change (AGD007)."""
from __future__ import annotations

from typing import Any

import torch

from .errors import first_line
from .inputs import Inputs, differentiable_positions
from .probing import differentiable_outputs, fresh
from .target import Target
from .verdicts import report_backward_error


def check_forward_backward(target: Target, inputs: Inputs) -> bool:
    """AGD003/004 (raised, wrong shapes), AGD005 (gradient changed), AGD006 (ctx
    attributes), AGD007 (saved tensors changed). True when backward works."""
    args = fresh(inputs.args)
    target.probed.add("AGD003")
    try:
        output = target.apply(*args)
    except Exception as exc:
        target.report("AGD003", where="forward", detail=first_line(exc))
        return False
    target.probed.add("AGD006")
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
        report_backward_error(target, inputs, exc)
        return False
    target.probed.update(("AGD004", "AGD005", "AGD007"))
    if node is not None:
        _check_ctx_attributes(target, node, after_backward=True)
    for index, (grad, copy) in enumerate(zip(grads, copies, strict=True)):
        if not torch.equal(grad, copy):
            change = (grad - copy).abs().max().item()
            target.report("AGD005", index=index, error=f"{change:.3g}")
    for index, (tensor, version, snapshot) in enumerate(zip(saved, versions, snapshots,
                                                            strict=True)):
        if tensor._version != version:
            target.report("AGD007", index=index,
                          how=f"its version went from {version} to {tensor._version}")
        elif not _same_values(tensor.detach(), snapshot):
            change = (tensor.detach().double() - snapshot.double()).abs().nan_to_num(
                nan=float("inf")).max().item()
            target.report("AGD007", index=index,
                          how=f"its values changed by up to {change:.3g}, written behind "
                              "autograd's version counter (a kernel or `.data`)")
    _check_raw_gradients(target, inputs, args, node, grads, output)
    if any(f["code"] in ("AGD004", "AGD005", "AGD007", "AGD011") for f in target.findings):
        return False  # numerical checks would only echo this defect
    return all(r is None or bool(torch.isfinite(r).all()) for r in results)


def _same_values(tensor: torch.Tensor, snapshot: torch.Tensor) -> bool:
    """Element for element, a NaN where the snapshot had one counting as
    unchanged (`torch.equal` says NaN != NaN: a saved statistic a kernel
    left NaN would read as written)."""
    if torch.equal(tensor, snapshot):
        return True
    if not tensor.is_floating_point() or tensor.shape != snapshot.shape:
        return False
    nan = torch.isnan(tensor)
    return torch.equal(nan, torch.isnan(snapshot)) and torch.equal(tensor[~nan], snapshot[~nan])


def _saved_tensors(node: Any) -> list[torch.Tensor]:
    try:
        return [t for t in node.saved_tensors if isinstance(t, torch.Tensor)] if node else []
    except Exception:
        return []


def _check_ctx_attributes(target: Target, node: Any, after_backward: bool = False) -> None:
    """AGD006 for each ctx attribute holding tensors; after backward, for
    those backward put there (it runs again under activation checkpointing,
    and the graph, with what ctx holds, may be kept for another backward)."""
    attributes = getattr(node, "__dict__", {})
    for attr, value in list(attributes.items()):
        what = _tensor_description(value)
        if what is None:
            what = _held_by_object(value)
        if what is None:
            continue
        if after_backward and any(f["code"] == "AGD006" and f["attr"] == attr
                                  for f in target.findings):
            continue  # already there after forward
        target.report("AGD006", attr=attr, what=what,
                      when="after backward (backward stored it)" if after_backward
                      else "after forward")


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


def _held_by_object(value: Any) -> str | None:
    """An object on ctx (a parameter bundle, a state) whose own attribute
    holds a tensor computed in the graph: ctx keeps that graph alive as a
    tensor attribute would. Tensors with no graph behind them (a module's
    weights, a quantization table) are the object's to keep: not reported."""
    if isinstance(value, (torch.Tensor, torch.nn.Module, type)) or \
            not hasattr(value, "__dict__"):
        return None
    try:
        attributes = list(vars(value).items())
    except TypeError:
        return None
    for name, held in attributes:
        if _floating(held) and held.grad_fn is not None:
            return f"a `{type(value).__name__}` whose attribute `{name}` is a tensor of " \
                   f"shape {list(held.shape)} computed in the graph"
    return None


def _floating(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


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
