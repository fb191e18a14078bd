"""Example inputs for a Function: declared by the user, else synthesized from
forward's signature. Runs in the worker process (imports torch)."""
from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from . import EXAMPLES_ATTRIBUTE

# Shapes tried in order until forward accepts the inputs. Non-square first, so
# a gradient returned transposed does not pass for the right shape.
SHAPES: tuple[tuple[int, ...], ...] = ((3, 4), (4,), (2, 3, 4), (4, 4), (1, 3, 4, 4))
MAX_TRIES_PER_SHAPE = 16

# Values for well-known non-tensor parameter names, most likely first.
KNOWN_VALUES: dict[str, tuple[Any, ...]] = {
    "dim": (-1, 0), "axis": (-1, 0), "dims": ((-1,),), "start_dim": (0,), "end_dim": (-1,),
    "stride": (1,), "padding": (0,), "dilation": (1,), "groups": (1,), "kernel_size": (1,),
    "output_padding": (0,), "eps": (1e-5,), "epsilon": (1e-5,), "p": (0.5, 2), "alpha": (1.0,),
    "beta": (1.0,), "gamma": (1.0,), "momentum": (0.1,), "negative_slope": (0.01,),
    "lambd": (0.5,), "threshold": (0.5,), "min": (0.0,), "max": (1.0,), "temperature": (1.0,),
    "training": (False,), "inplace": (False,), "keepdim": (False,), "descending": (False,),
    "causal": (False,), "transpose": (False,), "reduction": ("mean", "sum", "none"),
    "num_groups": (1,), "chunks": (1,), "idx": (0,), "affine": (True, False),
    "elementwise_affine": (True, False), "bidirectional": (False,), "deterministic": (True,),
    "scale": (2.0,), "factor": (2.0,), "exponent": (2.0,), "power": (2.0,),
}
# Parameters that are index tensors: the identity permutation along `dim` is
# always valid, and is its own inverse.
INDEX_NAMES = frozenset({"index", "indices", "ind", "inds", "ind_inv", "perm", "permutation",
                         "inverse", "inv_perm", "order"})
# Optional parameters that are usually tensors (`bias=None`).
TENSOR_NAMES = frozenset({"bias", "weight", "mask", "attn_mask", "residual", "scale_tensor",
                          "gamma", "beta", "grad", "other", "target", "weights"})


@dataclass
class Inputs:
    """One set of arguments for `apply`, and how it was made."""

    args: tuple[Any, ...]
    names: list[str]
    declared: bool
    none_defaults: list[int] = field(default_factory=list)  # positions given a tensor
    # for a parameter that defaults to None

    def describe(self) -> str:
        return "declared inputs" if self.declared else "synthesized inputs " + \
            ", ".join(f"{name}={_short(value)}" for name, value in zip(self.names, self.args,
                                                                       strict=False))


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        kind = str(value.dtype).replace("torch.", "")
        return f"{kind}{list(value.shape)}"
    return repr(value)


def forward_parameters(cls: type) -> list[inspect.Parameter] | None:
    """forward's parameters as `apply` takes them (ctx dropped for ctx-style)."""
    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    if not uses_setup_context(cls) and parameters:
        parameters = parameters[1:]
    return parameters


def uses_setup_context(cls: type) -> bool:
    base = torch.autograd.function._SingleLevelFunction
    for klass in cls.__mro__:
        if klass is base or klass is torch.autograd.Function:
            return False
        if "setup_context" in vars(klass):
            return True
    return False


def prepare(value: Any, device: torch.device) -> Any:
    """float64 (complex128) on the device, requiring grad; other values as given."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.is_floating_point():
            tensor = tensor.to(device=device, dtype=torch.float64)
        elif tensor.is_complex():
            tensor = tensor.to(device=device, dtype=torch.complex128)
        else:
            return tensor.to(device=device)
        return tensor.clone().requires_grad_(True)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(prepare(v, device) for v in value)
    return value


def declared(cls: type, device: torch.device) -> list[Inputs] | None:
    """Examples from `@example_inputs(...)` or a `gradcheck_inputs` staticmethod."""
    raw: list[Any] = []
    factories = getattr(cls, EXAMPLES_ATTRIBUTE, None)
    if factories:
        for factory in factories:
            raw.append(factory() if callable(factory) else factory)
    elif callable(getattr(cls, "gradcheck_inputs", None)):
        produced = cls.gradcheck_inputs()
        raw.extend(produced if isinstance(produced, list) else [produced])
    else:
        return None
    parameters = forward_parameters(cls) or []
    names = [p.name for p in parameters]
    examples = []
    for example in raw:
        args = example if isinstance(example, tuple) else (example,)
        examples.append(Inputs(tuple(prepare(a, device) for a in args),
                               names[:len(args)] or [f"arg{i}" for i in range(len(args))],
                               declared=True))
    return examples


def synthesized(cls: type, device: torch.device) -> Iterator[Inputs]:
    """Candidate inputs from forward's signature, most plausible first."""
    parameters = forward_parameters(cls)
    if parameters is None:
        return
    # Named positional parameters only: `*args` gets nothing, keyword-only ones
    # keep their defaults (apply passes positionals).
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for shape in SHAPES:
        choices = [_choices(p, shape) for p in positional]
        for combination in itertools.islice(itertools.product(*choices), MAX_TRIES_PER_SHAPE):
            context = {p.name: value for p, value in zip(positional, combination, strict=True)
                       if not callable(value)}
            args = []
            for position, value in enumerate(combination):
                args.append(value(shape, context, device, position) if callable(value)
                            else value)
            none_defaults = [i for i, (p, a) in enumerate(zip(positional, args, strict=True))
                             if p.default is None and isinstance(a, torch.Tensor)]
            yield Inputs(tuple(args), [p.name for p in positional], declared=False,
                         none_defaults=none_defaults)


def _float_tensor(shape: tuple[int, ...], _: dict[str, Any], device: torch.device,
                  position: int) -> Any:
    # Values in [0.5, 1.5): away from the kinks and domain edges of relu, abs,
    # sqrt and log, where finite differences disagree with any correct backward.
    # A different seed per position: equal inputs would hide swapped gradients.
    generator = torch.Generator().manual_seed(1000 * position + len(shape))
    values = torch.rand(shape, dtype=torch.float64, generator=generator) + 0.5
    return values.to(device).requires_grad_(True)


def _index_tensor(shape: tuple[int, ...], context: dict[str, Any],
                  device: torch.device, _position: int) -> Any:
    dim = context.get("dim", context.get("axis", 0))
    size = shape[dim] if isinstance(dim, int) and -len(shape) <= dim < len(shape) else shape[0]
    return torch.arange(size, device=device)


class Unsynthesizable(Exception):
    """A parameter no guess fits (a callable, a module, a process group)."""


# Parameters that are not tensors and cannot be made up: a guessed tensor there
# would only produce findings about the guess.
CALLABLE_NAMES = frozenset({"func", "fn", "function", "run_function", "callback", "closure",
                            "forward_fn", "backward_fn", "hook", "op", "kernel", "f"})
OBJECT_NAMES = frozenset({"module", "model", "layer", "layers", "group", "process_group", "pg",
                          "portal", "config", "cfg", "options", "opts", "optimizer", "handle",
                          "stream", "context", "comm", "communicator", "mesh", "device_mesh",
                          "tokenizer", "cache", "state", "manager", "policy", "self"})
_BOOL_PREFIXES = ("is_", "use_", "has_", "enable_", "do_", "apply_", "return_", "need_",
                  "should_", "with_")
_INT_PREFIXES = ("num_", "n_")
_INT_SUFFIXES = ("_size", "_dim", "_len", "_rank", "_idx", "_id", "_count", "_heads")


def _classify(name: str) -> list[Any] | None:
    """Candidates from the shape of a parameter's name, or None (a tensor)."""
    lowered = name.lower()
    if lowered in CALLABLE_NAMES or lowered.endswith(("_fn", "_func", "_function", "_hook")):
        raise Unsynthesizable(f"`{name}` looks like a callable")
    if lowered in OBJECT_NAMES or lowered.endswith(("_group", "_module", "_config", "_model")):
        raise Unsynthesizable(f"`{name}` looks like an object, not a tensor")
    if lowered.startswith(_BOOL_PREFIXES) or lowered.endswith("_flag"):
        return [False, True]
    if lowered.startswith(_INT_PREFIXES) or lowered.endswith(_INT_SUFFIXES) or \
            lowered in ("rank", "world_size", "size", "length", "seq_len", "heads", "head_dim"):
        return [1, 2]
    return None


def _choices(parameter: inspect.Parameter, shape: tuple[int, ...]) -> list[Any]:
    name = parameter.name
    annotation = str(parameter.annotation)
    default = parameter.default
    tensorish = "Tensor" in annotation
    if default is not parameter.empty and default is not None:
        return [default]
    if not tensorish and default is parameter.empty:
        classified = _classify(name)
        if classified is not None:
            return classified
    if default is None:
        if tensorish or name in TENSOR_NAMES:
            return [_float_tensor, None]
        return [None]
    if name in INDEX_NAMES:
        return [_index_tensor]
    if name in KNOWN_VALUES and not tensorish:
        return list(KNOWN_VALUES[name])
    if annotation in ("<class 'int'>", "int"):
        return [1]
    if annotation in ("<class 'float'>", "float"):
        return [0.5]
    if annotation in ("<class 'bool'>", "bool"):
        return [False]
    return [_float_tensor]


def differentiable_positions(args: tuple[Any, ...]) -> list[int]:
    return [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
