"""The arguments of a written test (`written_tests.py`) as Python source, in
the worker: each value the dynamic mode chose, written so that the test
builds it again with plain torch.

A floating tensor is written by its shape, dtype and the range of its
values (`_floats((3, 4), 0.5, 1.5, seed=0)`, a seeded uniform draw; the
range rounded outward to two significant digits), or, where values drawn
that way are not taken (`exact=True`), by its values themselves. An integer
or bool tensor (labels, indices, masks) keeps its values; a large one that
is not constant is drawn from its range. Numbers, strings, dtypes, enums,
dataclasses and NamedTuples are written as they are constructed. Anything
else (a process group, a module) cannot be written down: `Unwritable`.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import pprint
from typing import Any

import torch

# Integer and bool tensors up to this many elements are written by their values.
MAX_LITERAL = 1024
# Floating tensors written by their values (exact=True) up to this many elements.
MAX_EXACT = 4096


class Unwritable(Exception):
    """An argument a test cannot construct with plain code."""


class ValueWriter:
    """Writes the arguments of one test; collects the imports they need."""

    def __init__(self, device: torch.device, exact: bool = False) -> None:
        self.device = device
        self.exact = exact
        self.imports: set[str] = set()
        self.seed = 0

    def write(self, value: Any, name: str) -> str:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, name)
        if value is None or isinstance(value, (bool, str)):
            return repr(value)
        if isinstance(value, int):
            return repr(int(value))
        if isinstance(value, float):
            return _float(value)
        if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
            return str(value)
        if isinstance(value, torch.device):
            return "DEVICE" if value == self.device else f"torch.device({str(value)!r})"
        if isinstance(value, enum.Enum):
            return f"{self._imported(type(value))}.{value.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value, name)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            fields = ", ".join(f"{f}={self.write(getattr(value, f), f'{name}.{f}')}"
                               for f in value._fields)
            return f"{self._imported(type(value))}({fields})"
        if isinstance(value, (list, tuple)):
            items = [self.write(v, f"{name}[{i}]") for i, v in enumerate(value)]
            if isinstance(value, tuple):
                return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            return f"[{', '.join(items)}]"
        raise Unwritable(f"`{name}` is a `{type(value).__qualname__}`, which a test cannot "
                         "construct by itself")

    def _imported(self, cls: type) -> str:
        module, qualname = cls.__module__, cls.__qualname__
        if "<locals>" in qualname or not all(p.isidentifier() for p in module.split(".")):
            raise Unwritable(f"`{qualname}` cannot be imported by name")
        top = qualname.split(".")[0]
        self.imports.add(f"from {module} import {top}")
        return qualname

    def _dataclass(self, value: Any, name: str) -> str:
        fields = ", ".join(f"{f.name}={self.write(getattr(value, f.name), f'{name}.{f.name}')}"
                           for f in dataclasses.fields(value) if f.init)
        return f"{self._imported(type(value))}({fields})"

    def _tensor(self, tensor: torch.Tensor, name: str) -> str:
        if tensor.is_floating_point() or tensor.is_complex():
            return self._floating(tensor.detach(), tensor.requires_grad)
        tensor = tensor.detach()
        dtype = str(tensor.dtype)
        values = tensor.cpu()
        if tensor.numel() and bool((values == values.reshape(-1)[0]).all()):
            fill = values.reshape(-1)[0].item()
            return f"torch.full({_shape(tensor)}, {fill!r}, dtype={dtype}, device=DEVICE)"
        if tensor.numel() <= MAX_LITERAL:
            return f"_exact({_listing(values.tolist())}, {dtype})"
        if tensor.dtype == torch.bool:
            raise Unwritable(f"`{name}` is a bool tensor of {tensor.numel()} elements")
        self.seed += 1
        low, high = int(values.min()), int(values.max())
        return (f"torch.randint({low}, {high + 1}, {_shape(tensor)}, generator=torch.Generator()"
                f".manual_seed({self.seed}), dtype=torch.int64).to(DEVICE, {dtype})")

    def _floating(self, tensor: torch.Tensor, requires_grad: bool) -> str:
        dtype = "" if tensor.dtype == torch.float64 else f", dtype={tensor.dtype}"
        grad = "" if requires_grad else ", requires_grad=False"
        if self.exact and not tensor.is_complex():
            if tensor.numel() > MAX_EXACT:
                raise Unwritable(f"a tensor of {tensor.numel()} elements is too large to "
                                 "write down by its values")
            values = _listing(tensor.cpu().double().tolist())
            return f"_exact({values}, {tensor.dtype}, requires_grad={requires_grad})"
        seed = self.seed
        self.seed += 1
        low, high = _range(tensor.real if tensor.is_complex() else tensor)
        return f"_floats({_shape(tensor)}, {_float(low)}, {_float(high)}, seed={seed}" \
               f"{dtype}{grad})"


def _shape(tensor: torch.Tensor) -> str:
    shape = tuple(tensor.shape)
    return repr(shape)


def _range(tensor: torch.Tensor) -> tuple[float, float]:
    """The values' range, rounded outward to two significant digits; a
    constant tensor gets a range of one around its value (as a recorded
    call's is rebuilt)."""
    values = tensor.double()
    finite = values[torch.isfinite(values)]
    if not finite.numel():
        return 0.0, 1.0
    low, high = _round(float(finite.min()), math.floor), _round(float(finite.max()), math.ceil)
    if not high > low:
        low, high = low - 0.5, low + 0.5
    return low, high


def _round(value: float, direction: Any) -> float:
    if value == 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(abs(value))) - 1)
    return float(f"{direction(value / step) * step:.2g}")


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return f"float({str(value)!r})"
    return repr(value)


def _listing(values: Any) -> str:
    """Nested lists of values, wrapped to lines of 88 characters."""
    text = pprint.pformat(values, width=80, compact=True)
    return text.replace("\n", "\n" + " " * 8)
